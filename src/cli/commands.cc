#include "cli/commands.h"

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

  std::string file;
  bool detach = false;
  int timeout_s = 120;
  auto* up = app.add_subcommand(
      "up",
      "Bring up a cluster and wait until Ready (without -f: the state dir's cluster, or the embedded demo "
      "cluster when it holds none)");
  up->add_option("-f,--file", file, "SlurmCluster and NodeSet manifest (YAML or JSON)")->check(CLI::ExistingFile);
  up->add_flag("--detach", detach, "Return once Ready, leaving the cluster running");
  up->add_option("--timeout", timeout_s, "Seconds to wait for Ready");
  std::string control_plane;
  up->add_option("--control-plane", control_plane,
                 "HOST:PORT: also run the control plane's API and this data plane's agent, in the same process");
  std::string metrics_listen;
  up->add_option("--metrics-listen", metrics_listen,
                 "HOST:PORT (e.g. 127.0.0.1:9464): serve Prometheus metrics there, for the bearer token in "
                 "<state>/clusters/<name>/metrics.token");

  bool purge = false;
  auto* down = app.add_subcommand("down", "Stop every pod and remove the cluster's network (--purge: also its state)");
  down->add_flag("--purge", purge, "Also delete keys, Slurm state and volumes");

  auto* status = app.add_subcommand("status", "Show the cluster's components, nodesets and pods");

  std::string what, format = "table";
  auto* get = app.add_subcommand("get", "List clusters, nodesets or pods");
  get->add_option("resource", what, "clusters | nodesets | pods")->required();
  get->add_option("-o,--output", format, "table | yaml | json")->check(CLI::IsMember({"table", "yaml", "json"}));

  std::string kind, name;
  auto* describe = app.add_subcommand("describe", "Show one cluster, nodeset or pod in full");
  describe->add_option("kind", kind, "cluster | nodeset | pod")->required();
  describe->add_option("name", name, "Its name");

  auto* apply = app.add_subcommand("apply", "Create or update resources of a running cluster");
  apply->add_option("-f,--file", file, "Manifest (YAML or JSON)")->required()->check(CLI::ExistingFile);

  auto* del = app.add_subcommand("delete", "Delete a nodeset (its workers drain first)");
  del->add_option("kind", kind, "nodeset")->required();
  del->add_option("name", name, "Its name")->required();

  std::string environment;
  auto* upgrade = app.add_subcommand(
      "upgrade", "Move the cluster to another environment (Slurm release), keeping its queue and job history");
  upgrade->add_option("environment", environment, "e.g. slurm-26.05 (see `hpcplane environments list`)")->required();
  upgrade->add_option("--timeout", timeout_s, "Seconds to wait for Ready after the restart");

  std::optional<int> replicas;
  bool wait = false, autoscale = false;
  auto* scale = app.add_subcommand("scale", "Pin a nodeset's worker count (clamped to min..max), or --auto");
  scale->add_option("kind", kind, "nodeset")->required();
  scale->add_option("name", name, "Nodeset name")->required();
  auto* replicas_opt = scale->add_option("--replicas", replicas, "Workers wanted");
  auto* auto_opt = scale->add_flag("--auto", autoscale, "Let the autoscaler size it from pending jobs again");
  replicas_opt->excludes(auto_opt);
  scale->add_flag("--wait", wait, "Wait until the nodeset has exactly that many ready workers");
  scale->add_option("--timeout", timeout_s, "Seconds to wait with --wait");

  std::string pod, user = "root";
  std::vector<std::string> cmd;
  auto* exec = app.add_subcommand("exec", "Run a command in a pod as a user: hpcplane exec POD [--user U] -- CMD...");
  exec->add_option("pod", pod, "Pod name (see `hpcplane get pods`)")->required();
  exec->add_option("-u,--user", user, "User to run as");
  exec->add_option("command", cmd, "Command and arguments (default: a login shell)");

  int tail = 0;
  auto* logs = app.add_subcommand("logs", "Print a pod's output");
  logs->add_option("pod", pod, "Pod name")->required();
  logs->add_option("--tail", tail, "Only the last N lines");

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
  if (up->parsed()) return CmdUp(g, file, detach, timeout_s, control_plane, metrics_listen);
  if (down->parsed()) return CmdDown(g, purge);
  if (status->parsed()) return CmdStatus(g);
  if (get->parsed()) return CmdGet(g, what, format);
  if (describe->parsed()) {
    if (kind != "cluster" && name.empty()) return Fail(Status::Errorf("describe {}: a name is required", kind));
    return CmdDescribe(g, kind, name);
  }
  if (apply->parsed()) return CmdApply(g, file);
  if (upgrade->parsed()) return CmdUpgrade(g, environment, timeout_s);
  if (del->parsed()) return CmdDelete(g, kind, name);
  if (scale->parsed()) {
    if (!replicas && !autoscale) return Fail(Status::Error("scale: give --replicas N or --auto"));
    return CmdScale(g, kind, name, replicas, wait, timeout_s);
  }
  if (exec->parsed()) return CmdExec(g, pod, user, cmd);
  if (logs->parsed()) return CmdLogs(g, pod, tail);
  if (int rc = run_workspace_commands(); rc >= 0) return rc;
  if (int rc = run_project_commands(); rc >= 0) return rc;
  if (int rc = run_kubernetes_commands(); rc >= 0) return rc;
  if (int rc = run_environment_commands(); rc >= 0) return rc;
  return run_controlplane_commands();
}

}  // namespace hpc::cli
