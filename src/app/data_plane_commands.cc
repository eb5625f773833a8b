#include "app/data_plane_commands.h"

#include <chrono>

#include <fmt/format.h>

#include "operator/builders.h"
#include "operator/conditions.h"

namespace hpc::app {

cp::DataPlaneAccess::Health HealthOf(const api::SlurmCluster& c) {
  cp::DataPlaneAccess::Health h;
  const auto* ready = op::FindCondition(c.status.conditions, "Ready");
  h.healthy = ready && ready->status == "True";
  if (!h.healthy) h.reasons.push_back(ready ? ready->message : "no operator has reported the cluster's state yet");
  if (c.status.leading_controller == op::BackupControllerPodName(c)) {
    h.healthy = false;
    h.reasons.push_back(fmt::format("the backup controller {} serves: the primary {} does not",
                                    op::BackupControllerPodName(c), op::ControllerPodName(c)));
  }
  h.component_versions = c.status.component_versions;
  h.leading_controller = c.status.leading_controller;
  return h;
}

op::WorkspaceRequest WorkspaceRequestFor(const cp::WorkspaceCreation& c) {
  op::WorkspaceRequest r;
  r.user = c.user, r.project = c.project, r.tier = c.tier, r.name = c.id, r.max_workers = c.max_workers;
  r.idle_timeout_seconds = c.idle_timeout_seconds, r.token_lifetime_seconds = c.token_lifetime_seconds;
  r.datasets = c.datasets, r.admin = c.admin, r.environment = c.environment;
  return r;
}

runtime::ExecOptions ControllerCommand(const std::vector<std::string>& argv) {
  runtime::ExecOptions o;
  o.user = "slurm";
  o.argv = argv;
  o.env["SLURM_TIME_FORMAT"] = "%s";
  o.timeout = std::chrono::milliseconds(60000);
  return o;
}

Result<std::string> OutputOf(const std::vector<std::string>& argv, const Result<ProcessResult>& ran) {
  if (!ran.ok()) return ran.status();
  if (!ran->ok()) return Status::Errorf("{}: exit {}: {}", argv.at(0), ran->exit_code, ran->err);
  return ran->out;
}

Result<std::string> InControllerPod(runtime::PodRuntime* rt, const std::string& cluster,
                                    const std::vector<std::string>& argv, const std::string& serving) {
  api::SlurmCluster named;
  named.metadata.name = cluster;
  const std::string primary = op::ControllerPodName(named), backup = op::BackupControllerPodName(named);
  const std::string first = serving == backup ? backup : primary, second = first == primary ? backup : primary;
  auto ran = rt->Exec(first, ControllerCommand(argv));
  if (!ran.ok() || ran->timed_out) {
    auto other = rt->Exec(second, ControllerCommand(argv));
    if (other.ok() && !other->timed_out) ran = std::move(other);
  }
  return OutputOf(argv, ran);
}

runtime::ExecOptions WorkspaceCommand(const api::Workspace& w, const std::vector<std::string>& argv) {
  runtime::ExecOptions o;
  o.user = w.spec.user.name;  // never root: the login pod is the user's
  o.uid = w.spec.user.uid;
  o.env = op::WorkspaceShellEnv(w);
  o.working_dir = o.env["HPCPLANE_DATASET"];
  o.argv = argv;
  return o;
}

runtime::ExecOptions WorkspaceShell(const api::Workspace& w) {
  runtime::ExecOptions o = WorkspaceCommand(w, {"/bin/bash", "--norc", "--noprofile", "-i"});
  o.env["TERM"] = "xterm-256color";
  o.env["PS1"] = fmt::format("{}@{}:\\w$ ", w.spec.user.name, w.metadata.name);
  return o;
}

std::string LabTokenFile(const cp::LabLaunch& launch) {
  return fmt::format("/tmp/.hpcplane-lab-{}.token", launch.port);
}

std::vector<std::string> LabTokenWriter(const cp::LabLaunch& launch) {
  // In /tmp (sticky): a file of another user there is not replaced, and the write fails.
  return {"sh", "-c", "umask 077 && rm -f \"$0\" && cat > \"$0\"", LabTokenFile(launch)};
}

runtime::ExecOptions WorkspaceLab(const api::Workspace& w, const cp::LabLaunch& launch, const std::string& ip) {
  runtime::ExecOptions o = WorkspaceCommand(w, {});
  // On the pod's own address: reached from the agent; its token is the only way in.
  o.argv = {"sh", "-c", "JUPYTER_TOKEN=$(cat \"$0\") && rm -f \"$0\" && export JUPYTER_TOKEN && exec \"$@\"",
            LabTokenFile(launch), "jupyter-lab", "--no-browser", "--ServerApp.ip=" + ip,
            fmt::format("--ServerApp.port={}", launch.port), "--ServerApp.port_retries=0",
            "--ServerApp.base_url=" + launch.base_url, "--ServerApp.root_dir=" + o.working_dir,
            // The Host the agent sends is the pod's address, not localhost.
            "--ServerApp.allow_remote_access=True"};
  return o;
}

Status NoJupyterLab(const api::Workspace& w) {
  return Status::FailedPrecondition(fmt::format(
      "workspace {}'s environment ({}) has no JupyterLab: launch it on an environment with the package jupyterlab",
      w.metadata.name, w.spec.environment.empty() ? "the cluster's" : w.spec.environment));
}

std::vector<std::string> PodsForJobFiles(const std::vector<runtime::PodStatus>& pods, const std::string& node,
                                         const std::string& user,
                                         const std::function<std::string(const std::string&)>& workspace_user) {
  std::vector<std::string> worker, workspace_logins, login;
  for (const auto& p : pods) {
    if (p.phase != runtime::PodPhase::kRunning) continue;
    auto label = [&](const char* key) { return p.labels.count(key) ? p.labels.at(key) : std::string(); };
    const std::string component = label(op::kLabelComponent);
    if (component == "worker" && p.name == node) worker.push_back(p.name);
    if (component == "login") login.push_back(p.name);
    if (component == "workspace-login" && workspace_user(label(op::kLabelWorkspace)) == user) {
      workspace_logins.push_back(p.name);
    }
  }
  worker.insert(worker.end(), workspace_logins.begin(), workspace_logins.end());
  worker.insert(worker.end(), login.begin(), login.end());
  return worker;
}

}  // namespace hpc::app
