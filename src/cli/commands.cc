#include "cli/commands.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/controlplane_commands.h"
#include "cli/environment_commands.h"
#include "cli/inspect_commands.h"
#include "cli/kubernetes_commands.h"
#include "cli/lifecycle_commands.h"
#include "cli/project_commands.h"
#include "cli/support.h"
#include "cli/workspace_commands.h"
#include "common/log.h"

namespace hpc::cli {

namespace {

// What the cluster commands (up, down, status, get, describe, apply, delete, upgrade, scale, exec,
// logs) are given on the command line.
struct ClusterArgs {
  std::string file;
  bool detach = false;
  int timeout_s = 120;
  std::string control_plane, metrics_listen;
  bool purge = false;
  std::string what, format = "table";
  std::string kind, name;
  std::string environment;
  std::string drain_deadline, after_deadline;
  bool restart = false;
  std::optional<int> replicas;
  bool wait = false, autoscale = false;
  std::string pod, user = "root";
  std::vector<std::string> cmd;
  int tail = 0;
};

// The cluster commands; the returned function runs the one parsed (-1 when none was).
std::function<int()> AddClusterCommands(CLI::App& app, const Globals& g) {
  auto a = std::make_shared<ClusterArgs>();
  auto* up = app.add_subcommand(
      "up",
      "Bring up a cluster and wait until Ready (without -f: the state dir's cluster, or the embedded demo "
      "cluster when it holds none)");
  up->add_option("-f,--file", a->file, "SlurmCluster and NodeSet manifest (YAML or JSON)")->check(CLI::ExistingFile);
  up->add_flag("--detach", a->detach, "Return once Ready, leaving the cluster running");
  up->add_option("--timeout", a->timeout_s, "Seconds to wait for Ready");
  up->add_option("--control-plane", a->control_plane,
                 "HOST:PORT: also run the control plane's API and this data plane's agent, in the same process");
  up->add_option("--metrics-listen", a->metrics_listen,
                 "HOST:PORT (e.g. 127.0.0.1:9464): serve Prometheus metrics there, for the bearer token in "
                 "<state>/clusters/<name>/metrics.token");

  auto* down = app.add_subcommand("down", "Stop every pod and remove the cluster's network (--purge: also its state)");
  down->add_flag("--purge", a->purge, "Also delete keys, Slurm state and volumes");

  auto* status = app.add_subcommand("status", "Show the cluster's components, nodesets and pods");

  auto* get = app.add_subcommand("get", "List clusters, nodesets or pods");
  get->add_option("resource", a->what, "clusters | nodesets | pods")->required();
  get->add_option("-o,--output", a->format, "table | yaml | json")->check(CLI::IsMember({"table", "yaml", "json"}));

  auto* describe = app.add_subcommand("describe", "Show one cluster, nodeset or pod in full");
  describe->add_option("kind", a->kind, "cluster | nodeset | pod")->required();
  describe->add_option("name", a->name, "Its name");

  auto* apply = app.add_subcommand("apply", "Create or update resources of a running cluster");
  apply->add_option("-f,--file", a->file, "Manifest (YAML or JSON)")->required()->check(CLI::ExistingFile);

  auto* del = app.add_subcommand("delete", "Delete a nodeset (its workers drain first)");
  del->add_option("kind", a->kind, "nodeset")->required();
  del->add_option("name", a->name, "Its name")->required();

  auto* upgrade = app.add_subcommand(
      "upgrade", "Move the cluster to another environment (Slurm release), keeping its queue and job history");
  upgrade->add_option("environment", a->environment, "e.g. slurm-26.05 (see `hpcplane environments list`)")->required();
  upgrade->add_option("--timeout", a->timeout_s,
                      "Seconds to wait for slurmctld on the new release (a rolling upgrade) or for Ready (a restart)");
  upgrade->add_option("--drain-deadline", a->drain_deadline,
                      "How long workers on the old release may run their jobs after their drain (e.g. 2h; "
                      "spec.upgrade.drainDeadline, default 24h)");
  upgrade
      ->add_option("--after-deadline", a->after_deadline,
                   "Then: wait (let them finish), requeue or cancel their jobs (spec.upgrade.afterDeadline)")
      ->check(CLI::IsMember({"wait", "requeue", "cancel", "Wait", "Requeue", "Cancel"}));
  upgrade->add_flag("--restart", a->restart,
                    "Restart every pod on the new release at once instead of rolling: quicker, but jobs running on "
                    "workers end with them");

  auto* scale = app.add_subcommand("scale", "Pin a nodeset's worker count (clamped to min..max), or --auto");
  scale->add_option("kind", a->kind, "nodeset")->required();
  scale->add_option("name", a->name, "Nodeset name")->required();
  auto* replicas_opt = scale->add_option("--replicas", a->replicas, "Workers wanted");
  auto* auto_opt = scale->add_flag("--auto", a->autoscale, "Let the autoscaler size it from pending jobs again");
  replicas_opt->excludes(auto_opt);
  scale->add_flag("--wait", a->wait, "Wait until the nodeset has exactly that many ready workers");
  scale->add_option("--timeout", a->timeout_s, "Seconds to wait with --wait");

  auto* exec = app.add_subcommand("exec", "Run a command in a pod as a user: hpcplane exec POD [--user U] -- CMD...");
  exec->add_option("pod", a->pod, "Pod name (see `hpcplane get pods`)")->required();
  exec->add_option("-u,--user", a->user, "User to run as");
  exec->add_option("command", a->cmd, "Command and arguments (default: a login shell)");

  auto* logs = app.add_subcommand("logs", "Print a pod's output");
  logs->add_option("pod", a->pod, "Pod name")->required();
  logs->add_option("--tail", a->tail, "Only the last N lines");

  return [=, &g]() -> int {
    if (up->parsed()) return CmdUp(g, a->file, a->detach, a->timeout_s, a->control_plane, a->metrics_listen);
    if (down->parsed()) return CmdDown(g, a->purge);
    if (status->parsed()) return CmdStatus(g);
    if (get->parsed()) return CmdGet(g, a->what, a->format);
    if (describe->parsed()) {
      if (a->kind != "cluster" && a->name.empty())
        return Fail(Status::Errorf("describe {}: a name is required", a->kind));
      return CmdDescribe(g, a->kind, a->name);
    }
    if (apply->parsed()) return CmdApply(g, a->file);
    if (upgrade->parsed()) {
      return CmdUpgrade(g, {a->environment, a->timeout_s, a->drain_deadline, a->after_deadline, a->restart});
    }
    if (del->parsed()) return CmdDelete(g, a->kind, a->name);
    if (scale->parsed()) {
      if (!a->replicas && !a->autoscale) return Fail(Status::Error("scale: give --replicas N or --auto"));
      return CmdScale(g, a->kind, a->name, a->replicas, a->wait, a->timeout_s);
    }
    if (exec->parsed()) return CmdExec(g, a->pod, a->user, a->cmd);
    if (logs->parsed()) return CmdLogs(g, a->pod, a->tail);
    return -1;
  };
}

}  // namespace

int Main(int argc, char** argv, const std::string& self_exe) {
  Globals g;
  g.self_exe = self_exe;
  if (const char* s = std::getenv("HPCPLANE_STATE_DIR")) g.state_dir = s;
  if (const char* c = std::getenv("HPCPLANE_CLUSTER")) g.cluster = c;

  CLI::App app{"hpcplane: real Slurm as a service, on local pods or Kubernetes"};
  app.set_version_flag("--version", HPCPLANE_VERSION);
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();
  app.add_option("--state-dir", g.state_dir, "Where clusters keep their state (env HPCPLANE_STATE_DIR)");
  app.add_option("--cluster", g.cluster, "Cluster to act on when the state dir holds several (env HPCPLANE_CLUSTER)");
  app.add_flag("-v,--verbose", g.verbose, "Log what hpcplane does");

  auto run_cluster_commands = AddClusterCommands(app, g);
  auto run_workspace_commands = AddWorkspaceCommands(app, g);
  auto run_controlplane_commands = AddControlPlaneCommands(app, g);
  auto run_project_commands = AddProjectCommands(app);
  auto run_kubernetes_commands = AddKubernetesCommands(app);
  auto run_environment_commands = AddEnvironmentCommands(app, g);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  log::InitConsole(g.verbose);
  if (int rc = run_cluster_commands(); rc >= 0) return rc;
  if (int rc = run_workspace_commands(); rc >= 0) return rc;
  if (int rc = run_project_commands(); rc >= 0) return rc;
  if (int rc = run_kubernetes_commands(); rc >= 0) return rc;
  if (int rc = run_environment_commands(); rc >= 0) return rc;
  return run_controlplane_commands();
}

}  // namespace hpc::cli
