#include "app/local_data_plane.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/environments.h"
#include "app/runtime_factory.h"
#include "operator/builders.h"
#include "operator/conditions.h"
#include "operator/store.h"
#include "operator/workspace_request.h"
#include "platform/catalog.h"
#include "runtime/local/local_runtime.h"

namespace hpc::app {
namespace {

// The user as the control plane knows them, in this data plane's catalog with the same uid.
Status EnsureUser(const platform::Catalog& catalog, const cp::WorkspaceCreation& w) {
  ASSIGN_OR_RETURN(auto users, catalog.Users());
  for (const auto& u : users) {
    if (u.name != w.user) continue;
    if (u.uid != w.uid) {
      return Status::Errorf("user {} has uid {} on this data plane but uid {} on the control plane", w.user, u.uid,
                            w.uid);
    }
    return Status::Ok();
  }
  auto added = catalog.AddUser(w.user, {w.admin ? platform::kRoleSysAdmin : platform::kRoleUser}, w.uid);
  if (!added.ok()) return Status::Errorf("user {}: {}", w.user, added.status().message());
  spdlog::info("workspace {}: user {} added with uid {}", w.id, w.user, w.uid);
  return Status::Ok();
}

}  // namespace

LocalDataPlane::LocalDataPlane(op::ClusterPaths paths, std::string self_exe)
    : paths_(std::move(paths)), self_exe_(std::move(self_exe)) {}

cp::DataPlaneAccess::Health LocalDataPlane::CheckHealth() {
  Health h;
  op::Store store(paths_.Dir());
  auto c = store.LoadCluster();
  if (!c.ok()) {
    h.reasons.push_back(c.status().message());
  } else if (op::RunningDaemon(paths_) == 0) {
    h.reasons.push_back("the hpcplane operator of cluster " + paths_.name + " is not running");
  } else {
    const auto* ready = op::FindCondition(c->status.conditions, "Ready");
    h.healthy = ready && ready->status == "True";
    if (!h.healthy) h.reasons.push_back(ready ? ready->message : "cluster status unknown");
    h.component_versions = c->status.component_versions;
  }
  return h;
}

Result<std::vector<cp::LiveNodeSet>> LocalDataPlane::NodeSets() {
  ASSIGN_OR_RETURN(std::vector<api::NodeSet> all, op::Store(paths_.Dir()).LoadAllNodeSets());
  std::vector<cp::LiveNodeSet> out;
  for (const auto& n : all) {
    const auto& s = n.status;
    out.push_back({n.metadata.name, s.desired, s.replicas, s.busy, s.idle, s.draining});
  }
  return out;
}

Result<std::optional<api::Workspace>> LocalDataPlane::FindWorkspace(const std::string& id) {
  op::Store store(paths_.Dir());
  if (id.empty() || !store.HasWorkspace(id)) return std::optional<api::Workspace>();
  ASSIGN_OR_RETURN(api::Workspace w, store.LoadWorkspace(id));
  return std::optional<api::Workspace>(std::move(w));
}

Status LocalDataPlane::CreateWorkspace(const cp::WorkspaceCreation& w) {
  platform::Catalog catalog(paths_.state_dir);
  RETURN_IF_ERROR(EnsureUser(catalog, w));
  op::WorkspaceRequest r;
  r.user = w.user, r.project = w.project, r.tier = w.tier, r.name = w.id, r.max_workers = w.max_workers;
  r.idle_timeout_seconds = w.idle_timeout_seconds, r.token_lifetime_seconds = w.token_lifetime_seconds;
  r.datasets = w.datasets, r.admin = w.admin, r.environment = w.environment;
  // Built here (or reused) and checked against the cluster's Slurm before anything is written.
  ASSIGN_OR_RETURN(api::SlurmCluster cluster, op::Store(paths_.Dir()).LoadCluster());
  RETURN_IF_ERROR(EnsureWorkspaceImage(paths_.state_dir, cluster, w.environment, [&](const std::string& line) {
    spdlog::info("workspace {}: environment {}: {}", w.id, w.environment, line);
  }));
  return op::CreateWorkspace(paths_, catalog, r).status();
}

Status LocalDataPlane::StopWorkspace(const std::string& id, bool cancel_jobs) {
  op::Store store(paths_.Dir());
  ASSIGN_OR_RETURN(api::Workspace w, store.LoadWorkspace(id));
  w.spec.stopping = true;
  w.spec.cancel_jobs = w.spec.cancel_jobs || cancel_jobs;
  return store.SaveWorkspace(w);
}

Result<runtime::PodRuntime*> LocalDataPlane::Runtime() {
  // Opened once: the cluster's pod names do not change while it exists.
  std::lock_guard<std::mutex> lock(runtime_mu_);
  if (!runtime_) {
    op::Store store(paths_.Dir());
    ASSIGN_OR_RETURN(api::SlurmCluster c, store.LoadCluster());
    ASSIGN_OR_RETURN(runtime_, OpenClientRuntime(paths_, self_exe_));
    controller_pod_ = op::ControllerPodName(c);
  }
  return runtime_.get();
}

Result<std::string> LocalDataPlane::InController(const std::vector<std::string>& argv) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  runtime::ExecOptions o;
  o.user = "slurm";
  o.argv = argv;
  o.env["SLURM_TIME_FORMAT"] = "%s";
  o.timeout = std::chrono::milliseconds(60000);
  ASSIGN_OR_RETURN(ProcessResult r, rt->Exec(controller_pod_, o));
  if (!r.ok()) return Status::Errorf("{}: exit {}: {}", argv[0], r.exit_code, r.err);
  return r.out;
}

Result<ProcessResult> LocalDataPlane::InWorkspace(const api::Workspace& w, const std::vector<std::string>& argv,
                                                  const std::string& stdin_data) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  runtime::ExecOptions o;
  o.user = w.spec.user.name;  // never root: the login pod is the user's
  o.env = op::WorkspaceShellEnv(w);
  o.working_dir = o.env["HPCPLANE_DATASET"];
  o.argv = argv;
  o.stdin_data = stdin_data;
  return rt->Exec(op::WorkspaceLoginPodName(w), o);
}

Result<PtyProcess> LocalDataPlane::StartShell(const api::Workspace& w, int cols, int rows) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  auto* local = dynamic_cast<runtime::local::LocalRuntime*>(rt);
  if (local == nullptr) {
    return Status::FailedPrecondition("a terminal in the browser runs on the local runtime only, for now");
  }
  runtime::ExecOptions o;
  o.user = w.spec.user.name;  // never root: the login pod is the user's
  o.env = op::WorkspaceShellEnv(w);
  o.env["TERM"] = "xterm-256color";
  o.env["PS1"] = fmt::format("{}@{}:\\w$ ", w.spec.user.name, w.metadata.name);
  o.working_dir = o.env["HPCPLANE_DATASET"];
  o.argv = {"/bin/bash", "--norc", "--noprofile", "-i"};
  ASSIGN_OR_RETURN(auto argv, local->ExecArgv(op::WorkspaceLoginPodName(w), o));
  return SpawnOnPty(argv, cols, rows);
}

Result<cp::LabProcess> LocalDataPlane::StartLab(const api::Workspace& w, const cp::LabLaunch& launch) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  auto* local = dynamic_cast<runtime::local::LocalRuntime*>(rt);
  if (local == nullptr) return Status::FailedPrecondition("JupyterLab runs on the local runtime only, for now");
  const std::string pod = op::WorkspaceLoginPodName(w);
  ASSIGN_OR_RETURN(auto found, InWorkspace(w, {"sh", "-c", "command -v jupyter-lab"}, ""));
  if (!found.ok()) {
    return Status::FailedPrecondition(fmt::format(
        "workspace {}'s environment ({}) has no JupyterLab: launch it on an environment with the package jupyterlab",
        w.metadata.name, w.spec.environment.empty() ? "the cluster's" : w.spec.environment));
  }
  ASSIGN_OR_RETURN(auto pods, rt->ListPods({{op::kLabelCluster, paths_.name}}));
  std::string ip;
  for (const auto& p : pods)
    if (p.name == pod && p.phase == runtime::PodPhase::kRunning) ip = p.ip;
  if (ip.empty())
    return Status::FailedPrecondition(fmt::format("workspace {}'s login pod is not running", w.metadata.name));
  runtime::ExecOptions o;
  o.user = w.spec.user.name;  // never root: the login pod is the user's
  o.env = op::WorkspaceShellEnv(w);
  o.env["JUPYTER_TOKEN"] = launch.token;
  o.working_dir = o.env["HPCPLANE_DATASET"];
  // On the pod's own address: reached from the data plane's host; its token is the only way in.
  o.argv = {"jupyter-lab", "--no-browser", "--ServerApp.ip=" + ip, fmt::format("--ServerApp.port={}", launch.port),
            "--ServerApp.port_retries=0", "--ServerApp.base_url=" + launch.base_url,
            "--ServerApp.root_dir=" + o.working_dir,
            // The Host the agent sends is the pod's address, not localhost.
            "--ServerApp.allow_remote_access=True"};
  ASSIGN_OR_RETURN(auto argv, local->ExecArgv(pod, o));
  ASSIGN_OR_RETURN(PtyProcess process, SpawnOnPty(argv, 200, 50));
  return cp::LabProcess{process, ip, launch.port};
}

Result<std::vector<std::string>> LocalDataPlane::PodsForJobFiles(const std::string& node, const std::string& user) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  ASSIGN_OR_RETURN(auto pods, rt->ListPods({{op::kLabelCluster, paths_.name}}));
  std::vector<std::string> worker, workspace_logins, login;
  op::Store store(paths_.Dir());
  for (const auto& p : pods) {
    if (p.phase != runtime::PodPhase::kRunning) continue;
    auto label = [&](const char* key) { return p.labels.count(key) ? p.labels.at(key) : std::string(); };
    const std::string component = label(op::kLabelComponent);
    if (component == "worker" && p.name == node) worker.push_back(p.name);
    if (component == "login") login.push_back(p.name);
    if (component == "workspace-login") {
      auto w = store.LoadWorkspace(label(op::kLabelWorkspace));
      if (w.ok() && w->spec.user.name == user) workspace_logins.push_back(p.name);
    }
  }
  worker.insert(worker.end(), workspace_logins.begin(), workspace_logins.end());
  worker.insert(worker.end(), login.begin(), login.end());
  return worker;
}

Result<ProcessResult> LocalDataPlane::AsUserInPod(const std::string& pod, const std::string& user,
                                                  const std::vector<std::string>& argv) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  runtime::ExecOptions o;
  o.user = user;
  o.argv = argv;
  o.timeout = std::chrono::milliseconds(20000);
  return rt->Exec(pod, o);
}

}  // namespace hpc::app
