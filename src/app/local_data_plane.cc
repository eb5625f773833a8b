#include "app/local_data_plane.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/data_plane_commands.h"
#include "app/environments.h"
#include "app/runtime_factory.h"
#include "operator/builders.h"
#include "operator/store.h"
#include "operator/workspace_request.h"
#include "platform/catalog.h"
#include "runtime/local/local_runtime.h"

namespace hpc::app {
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
    h = HealthOf(*c);
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
  RETURN_IF_ERROR(catalog.EnsureUser(w.user, w.uid, w.admin));
  const op::WorkspaceRequest r = WorkspaceRequestFor(w);
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
  // Opened once, for a cluster that exists.
  std::lock_guard<std::mutex> lock(runtime_mu_);
  if (!runtime_) {
    RETURN_IF_ERROR(op::Store(paths_.Dir()).LoadCluster().status());
    ASSIGN_OR_RETURN(runtime_, OpenClientRuntime(paths_, self_exe_));
  }
  return runtime_.get();
}

Result<std::string> LocalDataPlane::InController(const std::vector<std::string>& argv) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  auto c = op::Store(paths_.Dir()).LoadCluster();
  return InControllerPod(rt, paths_.name, argv, c.ok() ? c->status.leading_controller : "");
}

Result<ProcessResult> LocalDataPlane::InWorkspace(const api::Workspace& w, const std::vector<std::string>& argv,
                                                  const std::string& stdin_data) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  runtime::ExecOptions o = WorkspaceCommand(w, argv);
  o.stdin_data = stdin_data;
  return rt->Exec(op::WorkspaceLoginPodName(w), o);
}

Result<PtyProcess> LocalDataPlane::StartShell(const api::Workspace& w, int cols, int rows) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  auto* local = dynamic_cast<runtime::local::LocalRuntime*>(rt);
  if (local == nullptr) return Status::FailedPrecondition("cluster " + paths_.name + " does not run on local pods");
  ASSIGN_OR_RETURN(auto argv, local->ExecArgv(op::WorkspaceLoginPodName(w), WorkspaceShell(w)));
  return SpawnOnPty(argv, cols, rows);
}

Result<cp::LabProcess> LocalDataPlane::StartLab(const api::Workspace& w, const cp::LabLaunch& launch) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  auto* local = dynamic_cast<runtime::local::LocalRuntime*>(rt);
  if (local == nullptr) return Status::FailedPrecondition("cluster " + paths_.name + " does not run on local pods");
  const std::string pod = op::WorkspaceLoginPodName(w);
  ASSIGN_OR_RETURN(auto found, InWorkspace(w, kFindJupyterLab, ""));
  if (!found.ok()) return NoJupyterLab(w);
  ASSIGN_OR_RETURN(auto pods, rt->ListPods({{op::kLabelCluster, paths_.name}}));
  std::string ip;
  for (const auto& p : pods)
    if (p.name == pod && p.phase == runtime::PodPhase::kRunning) ip = p.ip;
  if (ip.empty())
    return Status::FailedPrecondition(fmt::format("workspace {}'s login pod is not running", w.metadata.name));
  ASSIGN_OR_RETURN(auto written, InWorkspace(w, LabTokenWriter(launch), launch.token));
  if (!written.ok()) return Status::Errorf("JupyterLab's token file in {}: {}", pod, written.err);
  ASSIGN_OR_RETURN(auto argv, local->ExecArgv(pod, WorkspaceLab(w, launch, ip)));
  ASSIGN_OR_RETURN(PtyProcess process, SpawnOnPty(argv, 200, 50));
  return cp::LabProcess{process, ip, launch.port};
}

Result<std::vector<std::string>> LocalDataPlane::PodsForJobFiles(const std::string& node, const std::string& user) {
  ASSIGN_OR_RETURN(runtime::PodRuntime * rt, Runtime());
  ASSIGN_OR_RETURN(auto pods, rt->ListPods({{op::kLabelCluster, paths_.name}}));
  op::Store store(paths_.Dir());
  return app::PodsForJobFiles(pods, node, user, [&](const std::string& workspace) {
    auto w = store.LoadWorkspace(workspace);
    return w.ok() ? w->spec.user.name : std::string();
  });
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
