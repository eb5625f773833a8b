#include "cli/workspace_commands.h"

#include <unistd.h>

#include <iostream>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "api/validation.h"
#include "app/environments.h"
#include "common/files.h"
#include "operator/builders.h"
#include "operator/store.h"
#include "operator/workspace.h"
#include "operator/workspace_request.h"
#include "platform/catalog.h"

namespace hpc::cli {
namespace {

using nlohmann::json;

struct LaunchArgs {
  std::string user, project, tier = "small", name, token_lifetime = "8h", idle_timeout = "5m", environment;
  int max_workers = 2;
  std::vector<std::string> datasets;
  int timeout_s = 180;
  bool no_wait = false;
};

Result<op::ClusterPaths> RunningCluster(const Globals& g) {
  ASSIGN_OR_RETURN(op::ClusterPaths p, ResolveCluster(g));
  if (op::RunningDaemon(p) == 0) {
    return Status::Errorf("cluster \"{}\" is not running (run `hpcplane up`)", p.name);
  }
  return p;
}

int CmdLaunch(const Globals& g, const LaunchArgs& a) {
  auto p = RunningCluster(g);
  if (!p.ok()) return Fail(p.status());
  auto lifetime = api::ParseDurationSeconds(a.token_lifetime);
  if (!lifetime.ok()) return Fail(Status::Errorf("--token-lifetime: {}", lifetime.status().message()));
  auto idle = api::ParseDurationSeconds(a.idle_timeout);
  if (!idle.ok()) return Fail(Status::Errorf("--idle-timeout: {}", idle.status().message()));
  op::WorkspaceRequest r;
  r.user = a.user, r.project = a.project, r.tier = a.tier, r.name = a.name, r.max_workers = a.max_workers;
  r.idle_timeout_seconds = *idle, r.token_lifetime_seconds = *lifetime, r.datasets = a.datasets;
  r.environment = a.environment;
  if (!a.environment.empty()) {
    auto cluster = op::Store(p->Dir()).LoadCluster();
    if (!cluster.ok()) return Fail(cluster.status());
    Status image = app::EnsureWorkspaceImage(g.state_dir, *cluster, a.environment,
                                             [](const std::string& line) { std::cout << line << std::endl; });
    if (!image.ok()) return Fail(Status::Errorf("workspace launch: {}", image.message()));
  }
  auto created = op::CreateWorkspace(*p, platform::Catalog(g.state_dir), r);
  if (!created.ok()) {
    std::string m = created.status().message();
    if (a.name.empty() && m.ends_with("(choose another workspace id)")) {
      m = m.substr(0, m.size() - 1) + " with --name)";
    }
    return Fail(Status::Errorf("workspace launch: {}", m));
  }
  const api::Workspace& w = *created;
  op::Store store(p->Dir());
  std::cout << fmt::format(
      "workspace/{} created for {} (uid {}{}) in project {}: tier {} ({} CPUs, {} MiB), up to {} workers\n",
      w.metadata.name, w.spec.user.name, w.spec.user.uid, w.spec.user.admin ? ", SysAdmin" : "", w.spec.project,
      w.spec.tier, w.spec.resources.cpus, w.spec.resources.memory_mib, w.spec.max_workers);
  if (a.no_wait) return 0;
  auto start = Clock::now();
  std::string last;
  while (Seconds(start) < a.timeout_s) {
    auto cur = store.LoadWorkspace(w.metadata.name);
    if (cur.ok()) {
      if (cur->status.phase == "Ready") {
        std::cout << fmt::format(
            "Workspace {} is ready in {:.1f}s. Slurm partition {} (workers scale from 0 to {}), "
            "dataset at /datasets/{}.\n  shell: hpcplane workspace shell {}\n  run:   hpcplane "
            "workspace exec {} -- sbatch --wrap 'hostname'\n",
            w.metadata.name, Seconds(start), w.metadata.name, w.spec.max_workers, w.spec.datasets.front(),
            w.metadata.name, w.metadata.name);
        return 0;
      }
      if (!cur->status.message.empty() && cur->status.message != last) {
        last = cur->status.message;
        std::cout << fmt::format("  {:5.1f}s  {}\n", Seconds(start), last);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Fail(
      Status::Errorf("workspace {} not ready after {}s: {} (it keeps trying; `hpcplane workspace stop {}` "
                     "removes it)",
                     w.metadata.name, a.timeout_s, last, w.metadata.name));
}

int CmdList(const Globals& g, const std::string& format) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  auto ws = store.LoadWorkspaces();
  if (!ws.ok()) return Fail(ws.status());
  auto nodesets = store.LoadAllNodeSets();
  if (format != "table") {
    json arr = json::array();
    for (const auto& w : *ws) {
      json j = op::WorkspaceSpecJson(w);
      j["status"] = op::WorkspaceStatusJson(w.status);
      arr.push_back(j);
    }
    std::cout << (format == "json" ? arr.dump(2) + "\n" : api::JsonToYaml(arr));
    return 0;
  }
  std::cout << fmt::format("{:<20} {:<12} {:<12} {:<8} {:<8} {:<5} {:<9} {}\n", "ID", "USER", "PROJECT", "TIER",
                           "WORKERS", "JOBS", "PHASE", "MESSAGE");
  for (const auto& w : *ws) {
    int workers = 0;
    if (nodesets.ok()) {
      for (const auto& n : *nodesets) {
        if (n.metadata.name == w.metadata.name) workers = n.status.replicas;
      }
    }
    std::cout << fmt::format("{:<20} {:<12} {:<12} {:<8} {:<8} {:<5} {:<9} {}\n", w.metadata.name, w.spec.user.name,
                             w.spec.project, w.spec.tier, fmt::format("{}/{}", workers, w.spec.max_workers),
                             w.status.active_jobs, w.spec.stopping ? "Stopping" : w.status.phase, w.status.message);
  }
  return 0;
}

// Runs argv (or a shell) in the workspace's login pod as its user, in the dataset directory.
int CmdShell(const Globals& g, const std::string& id, const std::vector<std::string>& argv) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  auto w = store.LoadWorkspace(id);
  if (!w.ok()) return Fail(w.status());
  if (w->spec.stopping) return Fail(Status::Errorf("workspace {} is stopping", id));
  if (w->status.phase != "Ready") {
    return Fail(Status::Errorf("workspace {} is not ready yet: {}", id, w->status.message));
  }
  auto rt = ClientRuntime(g, *p);
  if (!rt.ok()) return Fail(rt.status());
  runtime::ExecOptions o;
  o.user = w->spec.user.name;  // never root: the login pod is the user's
  o.env = op::WorkspaceShellEnv(*w);
  if (const char* term = std::getenv("TERM")) o.env["TERM"] = term;
  o.working_dir = o.env["HPCPLANE_DATASET"];
  o.argv = argv.empty() ? std::vector<std::string>{"/bin/bash", "--norc", "--noprofile", "-i"} : argv;
  if (argv.empty()) o.env["PS1"] = fmt::format("{}@{}:\\w$ ", w->spec.user.name, id);
  auto rc = (*rt)->ExecInteractive(op::WorkspaceLoginPodName(*w), o);
  if (!rc.ok()) return Fail(rc.status());
  return *rc;
}

int CmdStop(const Globals& g, const std::string& id, bool cancel_jobs, int timeout_s) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  auto w = store.LoadWorkspace(id);
  if (!w.ok()) return Fail(w.status());
  if (op::RunningDaemon(*p) == 0) {
    return Fail(Status::Errorf(
        "cluster \"{}\" is not running: a workspace stops through its operator (run `hpcplane up`)", p->name));
  }
  w->spec.stopping = true;
  w->spec.cancel_jobs = w->spec.cancel_jobs || cancel_jobs;
  if (Status s = store.SaveWorkspace(*w); !s.ok()) return Fail(s);
  std::cout << fmt::format("workspace/{}: stopping ({})\n", id,
                           w->spec.cancel_jobs ? "cancelling its jobs" : "waiting for its jobs to finish");
  auto start = Clock::now();
  std::string last;
  while (Seconds(start) < timeout_s) {
    if (!store.HasWorkspace(id)) {
      std::cout << fmt::format(
          "Workspace {} stopped in {:.1f}s: login pod, nodeset, partition and token removed; "
          "datasets and job history kept.\n",
          id, Seconds(start));
      return 0;
    }
    auto cur = store.LoadWorkspace(id);
    if (cur.ok() && !cur->status.message.empty() && cur->status.message != last) {
      last = cur->status.message;
      std::cout << fmt::format("  {:5.1f}s  {}\n", Seconds(start), last);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return Fail(Status::Errorf("workspace {} still stopping after {}s: {} (it keeps going in the background)", id,
                             timeout_s, last));
}

int CmdUsers(const Globals& g, const std::string& action, const std::string& name,
             const std::vector<std::string>& roles, std::optional<int64_t> uid) {
  platform::Catalog catalog(g.state_dir);
  if (action == "list") {
    auto users = catalog.Users();
    if (!users.ok()) return Fail(users.status());
    std::cout << fmt::format("{:<28} {:<16} {:<7} {}\n", "NAME", "SLURM-USER", "UID", "ROLES");
    for (const auto& u : *users) {
      std::string r;
      for (const auto& x : u.roles) r += (r.empty() ? "" : ",") + x;
      std::cout << fmt::format("{:<28} {:<16} {:<7} {}\n", u.name, u.slurm_name, u.uid, r);
    }
    return 0;
  }
  if (name.empty()) return Fail(Status::Errorf("users {}: a user name is required", action));
  if (action == "add") {
    auto u = catalog.AddUser(name, roles, uid);
    if (!u.ok()) return Fail(Status::Errorf("users add: {}", u.status().message()));
    std::cout << fmt::format("user {} added: Slurm user {}, uid {}, private group {}, roles {}\n", u->name,
                             u->slurm_name, u->uid, u->gid, u->IsSysAdmin() ? "SysAdmin" : "User");
    return 0;
  }
  if (action == "set-roles") {
    if (Status s = catalog.SetRoles(name, roles); !s.ok()) return Fail(s);
    std::cout << fmt::format("user {}: roles updated (running workspaces keep theirs until relaunched)\n", name);
    return 0;
  }
  if (action == "remove") {
    // A user with a workspace keeps their entry: the workspace's uid must stay theirs.
    auto u = catalog.FindUser(name);
    for (const auto& c : files::ListDir(g.state_dir + "/clusters")) {
      op::Store store(g.state_dir + "/clusters/" + c);
      auto ws = store.LoadWorkspaces();
      if (!ws.ok() || !u.ok()) continue;
      for (const auto& w : *ws) {
        if (w.spec.user.name == u->slurm_name) {
          return Fail(
              Status::Errorf("user {} has workspace {} on cluster {}: stop it first", name, w.metadata.name, c));
        }
      }
    }
    if (Status s = catalog.RemoveUser(name); !s.ok()) return Fail(s);
    std::cout << fmt::format("user {} removed\n", name);
    return 0;
  }
  return Fail(Status::Errorf("users: unknown action \"{}\" (add, list, set-roles, remove)", action));
}

int CmdTiers(const Globals& g, const std::string& action, const platform::Tier& t) {
  platform::Catalog catalog(g.state_dir);
  if (action == "list") {
    auto tiers = catalog.Tiers();
    if (!tiers.ok()) return Fail(tiers.status());
    auto node = platform::LocalNodeCapacity();
    std::cout << fmt::format("{:<16} {:>5} {:>10} {:>5}   (one node here: {} CPUs, {} MiB, {} GPUs)\n", "NAME", "CPUS",
                             "MEMORY-MIB", "GPUS", node.cpus, node.memory_mib, node.gpus);
    for (const auto& x : *tiers) {
      std::cout << fmt::format("{:<16} {:>5} {:>10} {:>5}\n", x.name, x.cpus, x.memory_mib, x.gpus);
    }
    return 0;
  }
  if (t.name.empty()) return Fail(Status::Errorf("tiers {}: a tier name is required", action));
  if (action == "add") {
    if (Status s = catalog.AddTier(t, platform::LocalNodeCapacity()); !s.ok()) {
      return Fail(Status::Errorf("tiers add: {}", s.message()));
    }
    std::cout << fmt::format("tier {} added: {} CPUs, {} MiB, {} GPUs per worker\n", t.name, t.cpus, t.memory_mib,
                             t.gpus);
    return 0;
  }
  if (action == "remove") {
    if (Status s = catalog.RemoveTier(t.name); !s.ok()) return Fail(s);
    std::cout << fmt::format("tier {} removed (running workspaces keep their shape)\n", t.name);
    return 0;
  }
  return Fail(Status::Errorf("tiers: unknown action \"{}\" (add, list, remove)", action));
}

}  // namespace

std::function<int()> AddWorkspaceCommands(CLI::App& app, Globals& g) {
  auto* ws = app.add_subcommand("workspace", "Launch, use and stop practitioners' workspaces");
  ws->require_subcommand(1);
  auto a = std::make_shared<LaunchArgs>();
  auto* launch = ws->add_subcommand("launch", "Create a workspace: login pod, autoscaled nodeset and partition, token");
  launch->add_option("--user", a->user, "Platform user (see `hpcplane users list`)")->required();
  launch->add_option("--project", a->project, "Project: its dataset is mounted at /datasets/<project>")->required();
  launch->add_option("--tier", a->tier, "Hardware tier of the workers (see `hpcplane tiers list`)");
  launch->add_option("--max-workers", a->max_workers, "Most workers the nodeset scales to");
  launch->add_option("--name", a->name, "Workspace id (default USER-PROJECT)");
  launch->add_option("--dataset", a->datasets, "Project datasets to mount (default: the project's own)");
  launch->add_option("--token-lifetime", a->token_lifetime, "Lifetime of the Slurm token (renewed before it ends)");
  launch->add_option("--idle-timeout", a->idle_timeout, "Idle time before a worker is removed");
  launch->add_option("--environment", a->environment,
                     "Workspace compute environment of its login pod (e.g. workspace-26.05; default: the cluster's)");
  launch->add_option("--timeout", a->timeout_s, "Seconds to wait for the workspace to be ready");
  launch->add_flag("--no-wait", a->no_wait, "Return once the workspace is recorded");

  auto format = std::make_shared<std::string>("table");
  auto* list = ws->add_subcommand("list", "List the cluster's workspaces");
  list->add_option("-o,--output", *format, "table | yaml | json")->check(CLI::IsMember({"table", "yaml", "json"}));

  auto id = std::make_shared<std::string>();
  auto cmd = std::make_shared<std::vector<std::string>>();
  auto* shell = ws->add_subcommand("shell", "Open a shell in the workspace's login pod, as its user");
  shell->add_option("id", *id, "Workspace id")->required();
  auto* exec = ws->add_subcommand("exec", "Run a command in the login pod as the user: exec ID -- CMD...");
  exec->add_option("id", *id, "Workspace id")->required();
  exec->add_option("command", *cmd, "Command and arguments")->required();

  auto cancel = std::make_shared<bool>(false);
  auto stop_timeout = std::make_shared<int>(600);
  auto* stop = ws->add_subcommand("stop", "Stop a workspace: wait for (or cancel) its jobs, then remove it");
  stop->add_option("id", *id, "Workspace id")->required();
  stop->add_flag("--cancel-jobs", *cancel, "Cancel its queued and running jobs instead of waiting");
  stop->add_option("--timeout", *stop_timeout, "Seconds to wait");

  auto action = std::make_shared<std::string>();
  auto name = std::make_shared<std::string>();
  auto roles = std::make_shared<std::vector<std::string>>();
  auto uid = std::make_shared<std::optional<int64_t>>();
  auto* users =
      app.add_subcommand("users", "Manage the platform's users: add NAME [--role SysAdmin], list, set-roles, remove");
  users->add_option("action", *action, "add | list | set-roles | remove")->required();
  users->add_option("name", *name, "User name (its Slurm name is derived from it)");
  users->add_option("--role", *roles, "SysAdmin or User (repeatable)");
  users->add_option("--uid", *uid, "Fixed uid (default: the next free one)");

  auto tier = std::make_shared<platform::Tier>();
  auto* tiers =
      app.add_subcommand("tiers", "Manage hardware tiers: add NAME --cpus N --memory-mib M [--gpus G], list, remove");
  tiers->add_option("action", *action, "add | list | remove")->required();
  tiers->add_option("name", tier->name, "Tier name");
  tiers->add_option("--cpus", tier->cpus, "CPUs per worker");
  tiers->add_option("--memory-mib", tier->memory_mib, "Memory per worker in MiB");
  tiers->add_option("--gpus", tier->gpus, "GPUs per worker");

  return [=, &g]() -> int {
    if (launch->parsed()) return CmdLaunch(g, *a);
    if (list->parsed()) return CmdList(g, *format);
    if (shell->parsed()) return CmdShell(g, *id, {});
    if (exec->parsed()) return CmdShell(g, *id, *cmd);
    if (stop->parsed()) return CmdStop(g, *id, *cancel, *stop_timeout);
    if (users->parsed()) return CmdUsers(g, *action, *name, *roles, *uid);
    if (tiers->parsed()) return CmdTiers(g, *action, *tier);
    return -1;
  };
}

}  // namespace hpc::cli
