#include "cli/project_commands.h"

#include <iostream>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/api_client.h"
#include "common/files.h"

namespace hpc::cli {
namespace {

using nlohmann::json;

struct ProjectArgs {
  std::string data_plane, default_tier, idle_timeout, token_lifetime, workspace_environment;
  std::vector<std::string> tiers, datasets, sys_admins;
  int max_workers = 0;
};

struct WorkspaceLaunchRequest {
  std::string user, tier, name;
  int max_workers = 0;
  int wait_s = 0;
};

int CmdSet(const ApiArgs& api, const std::string& project, const ProjectArgs& a) {
  json body = {{"dataPlane", a.data_plane}};
  if (!a.default_tier.empty()) body["defaultTier"] = a.default_tier;
  if (!a.tiers.empty()) body["tiers"] = a.tiers;
  if (a.max_workers) body["maxWorkers"] = a.max_workers;
  if (!a.idle_timeout.empty()) body["idleTimeout"] = a.idle_timeout;
  if (!a.token_lifetime.empty()) body["tokenLifetime"] = a.token_lifetime;
  if (!a.datasets.empty()) body["datasets"] = a.datasets;
  if (!a.sys_admins.empty()) body["sysAdmins"] = a.sys_admins;
  if (!a.workspace_environment.empty()) body["workspaceEnvironment"] = a.workspace_environment;
  auto r = Call(api, "PUT", "/api/v1/projects/" + project, body);
  if (!r.ok()) return Fail(Status::Errorf("projects set {}: {}", project, r.status().message()));
  std::cout << fmt::format("project {}: workspaces on data plane {}, tiers {} (default {}), up to {} workers\n",
                           project, (*r)["dataPlane"].get<std::string>(),
                           fmt::join((*r)["tiers"].get<std::vector<std::string>>(), ","),
                           (*r)["defaultTier"].get<std::string>(), (*r)["maxWorkers"].get<int>());
  return 0;
}

void PrintWorkspaces(const json& ws) {
  std::cout << fmt::format("{:<20} {:<12} {:<14} {:<8} {:<8} {:<9} {:<9} {}\n", "ID", "USER", "DATAPLANE", "TIER",
                           "WORKERS", "DESIRED", "PHASE", "MESSAGE");
  for (const auto& w : ws) {
    std::cout << fmt::format("{:<20} {:<12} {:<14} {:<8} {:<8} {:<9} {:<9} {}\n", w["id"].get<std::string>(),
                             w["user"].get<std::string>(), w["dataPlane"].get<std::string>(),
                             w["tier"].get<std::string>(), w["maxWorkers"].get<int>(), w["desired"].get<std::string>(),
                             w["phase"].get<std::string>(), w["message"].get<std::string>());
  }
}

// Polls the workspace until it reaches `phase` (or Failed) or `wait_s` passes.
int WaitForPhase(const ApiArgs& api, const std::string& project, const std::string& id, const std::string& phase,
                 int wait_s) {
  auto start = Clock::now();
  std::string last;
  while (Seconds(start) < wait_s) {
    auto r = Call(api, "GET", fmt::format("/api/v1/projects/{}/workspaces/{}", project, id));
    if (!r.ok()) return Fail(r.status());
    std::string now = (*r)["phase"].get<std::string>(), message = (*r)["message"].get<std::string>();
    if (now == phase) {
      std::cout << fmt::format("workspace {}: {} after {:.1f}s\n", id, phase, Seconds(start));
      return 0;
    }
    if (now == "Failed") return Fail(Status::Errorf("workspace {}: {}", id, message));
    if (now + message != last) std::cout << fmt::format("  {:5.1f}s  {}: {}\n", Seconds(start), now, message);
    last = now + message;
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  }
  return Fail(Status::Errorf("workspace {} not {} after {}s: {}", id, phase, wait_s, last));
}

int CmdLaunchThroughControlPlane(const ApiArgs& api, const std::string& project, const WorkspaceLaunchRequest& a) {
  json body = json::object();
  if (!a.user.empty()) body["user"] = a.user;
  if (!a.tier.empty()) body["tier"] = a.tier;
  if (!a.name.empty()) body["name"] = a.name;
  if (a.max_workers) body["maxWorkers"] = a.max_workers;
  auto r = Call(api, "POST", fmt::format("/api/v1/projects/{}/workspaces", project), body);
  if (!r.ok()) return Fail(Status::Errorf("projects launch {}: {}", project, r.status().message()));
  std::string id = (*r)["id"];
  std::cout << fmt::format("workspace {} requested for {} (uid {}) on data plane {}: tier {}, up to {} workers\n", id,
                           (*r)["user"].get<std::string>(), (*r)["uid"].get<int64_t>(),
                           (*r)["dataPlane"].get<std::string>(), (*r)["tier"].get<std::string>(),
                           (*r)["maxWorkers"].get<int>());
  return a.wait_s > 0 ? WaitForPhase(api, project, id, "Ready", a.wait_s) : 0;
}

int CmdStop(const ApiArgs& api, const std::string& project, const std::string& id, bool cancel_jobs, int wait_s) {
  auto r = Call(api, "DELETE",
                fmt::format("/api/v1/projects/{}/workspaces/{}{}", project, id, cancel_jobs ? "?cancelJobs=true" : ""));
  if (!r.ok()) return Fail(Status::Errorf("projects stop {}: {}", id, r.status().message()));
  std::cout << fmt::format("workspace {}: stop requested ({})\n", id,
                           cancel_jobs ? "cancelling its jobs" : "waiting for its jobs to finish");
  return wait_s > 0 ? WaitForPhase(api, project, id, "Stopped", wait_s) : 0;
}

struct TemplateArgs {
  std::string name, description, script_file;
  std::vector<std::string> options;  // key=value
};

// PUT /projects/{p}/templates/{name} from a script file and key=value options.
int CmdTemplateSet(const ApiArgs& api, const std::string& project, const TemplateArgs& a) {
  auto script = files::Read(a.script_file);
  if (!script.ok()) return Fail(Status::InvalidArgument("--script", script.status().message()));
  json options = json::object();
  for (const auto& kv : a.options) {
    auto eq = kv.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Fail(Status::InvalidArgument("--option", fmt::format("must be KEY=VALUE (got \"{}\")", kv)));
    }
    options[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  json body = {{"script", *script}, {"options", options}};
  if (!a.description.empty()) body["description"] = a.description;
  auto r = Call(api, "PUT", "/api/v1/projects/" + project + "/templates/" + a.name, body);
  if (!r.ok()) return Fail(Status::Errorf("projects templates set {} {}: {}", project, a.name, r.status().message()));
  std::cout << fmt::format("template {} of project {} saved ({} options)\n", a.name, project, options.size());
  return 0;
}

int CmdTemplateList(const ApiArgs& api, const std::string& project) {
  auto r = Call(api, "GET", "/api/v1/projects/" + project + "/templates");
  if (!r.ok()) return Fail(r.status());
  std::cout << fmt::format("{:<24} {:<40} {}\n", "NAME", "DESCRIPTION", "OPTIONS");
  for (const auto& t : (*r)["templates"]) {
    std::string opts;
    for (auto it = t["options"].begin(); it != t["options"].end(); ++it) {
      opts += fmt::format("{}{}={}", opts.empty() ? "" : " ", it.key(),
                          it.value().is_string() ? it.value().get<std::string>() : it.value().dump());
    }
    std::cout << fmt::format("{:<24} {:<40} {}\n", t["name"].get<std::string>(), t["description"].get<std::string>(),
                             opts);
  }
  return 0;
}

}  // namespace

std::function<int()> AddProjectCommands(CLI::App& app) {
  auto api = std::make_shared<ApiArgs>();
  auto project = std::make_shared<std::string>();
  auto* projects = app.add_subcommand("projects", "Projects on the control plane and their workspaces");
  projects->require_subcommand(1);

  auto pa = std::make_shared<ProjectArgs>();
  auto* set = projects->add_subcommand("set", "Configure a project (admin): where and how its workspaces run");
  AddApiOptions(set, api.get());
  set->add_option("project", *project, "Project")->required();
  set->add_option("--data-plane", pa->data_plane, "Data plane its workspaces run on")->required();
  set->add_option("--default-tier", pa->default_tier, "Tier of a workspace that names none (default small)");
  set->add_option("--tier", pa->tiers, "Tiers a workspace may ask for (repeatable)");
  set->add_option("--max-workers", pa->max_workers, "Most workers a workspace may scale to");
  set->add_option("--idle-timeout", pa->idle_timeout, "Idle time before a worker is removed (e.g. 5m)");
  set->add_option("--token-lifetime", pa->token_lifetime, "Lifetime of a workspace's Slurm token (e.g. 8h)");
  set->add_option("--dataset", pa->datasets, "Datasets mounted at /datasets/<name> (default: the project's own)");
  set->add_option("--sys-admin", pa->sys_admins, "Users whose workspaces get Slurm's administrator level");
  set->add_option("--workspace-environment", pa->workspace_environment,
                  "Workspace compute environment of its workspaces' login pods (default: the cluster's)");

  auto format = std::make_shared<std::string>("table");
  auto* show = projects->add_subcommand("show", "A project's configuration and its workspaces");
  AddApiOptions(show, api.get());
  show->add_option("project", *project, "Project")->required();
  show->add_option("-o,--output", *format, "table | json")->check(CLI::IsMember({"table", "json"}));

  auto la = std::make_shared<WorkspaceLaunchRequest>();
  auto* launch = projects->add_subcommand("launch", "Launch a workspace in a project, on its data plane");
  AddApiOptions(launch, api.get());
  launch->add_option("project", *project, "Project")->required();
  launch->add_option("--tier", la->tier, "Hardware tier (one the project offers)");
  launch->add_option("--max-workers", la->max_workers, "Most workers (up to the project's limit)");
  launch->add_option("--name", la->name, "Workspace id (default USER-PROJECT)");
  launch->add_option("--user", la->user, "Launch for this user (admins)");
  launch->add_option("--wait", la->wait_s, "Seconds to wait for it to be Ready (0: do not wait)");

  auto id = std::make_shared<std::string>();
  auto cancel = std::make_shared<bool>(false);
  auto stop_wait = std::make_shared<int>(0);
  auto* stop = projects->add_subcommand("stop", "Stop a workspace: its data plane drains it, then removes it");
  AddApiOptions(stop, api.get());
  stop->add_option("project", *project, "Project")->required();
  stop->add_option("id", *id, "Workspace id")->required();
  stop->add_flag("--cancel-jobs", *cancel, "Cancel its queued and running jobs instead of waiting");
  stop->add_option("--wait", *stop_wait, "Seconds to wait for it to be Stopped (0: do not wait)");

  auto ta = std::make_shared<TemplateArgs>();
  auto* templates = projects->add_subcommand("templates", "A project's batch job templates (Run starts from them)");
  templates->require_subcommand(1);
  auto* tlist = templates->add_subcommand("list", "The project's templates");
  AddApiOptions(tlist, api.get());
  tlist->add_option("project", *project, "Project")->required();
  auto* tset = templates->add_subcommand("set", "Create or replace a template (admin)");
  AddApiOptions(tset, api.get());
  tset->add_option("project", *project, "Project")->required();
  tset->add_option("name", ta->name, "Template name")->required();
  tset->add_option("--script", ta->script_file, "Batch script file (starts with #!)")->required();
  tset->add_option("--description", ta->description, "One line shown in the Run form");
  tset->add_option("--option", ta->options, "A whitelisted sbatch option, e.g. nodes=2 or time=00:10:00 (repeatable)");
  auto* tdelete = templates->add_subcommand("delete", "Delete a template (admin)");
  AddApiOptions(tdelete, api.get());
  tdelete->add_option("project", *project, "Project")->required();
  tdelete->add_option("name", ta->name, "Template name")->required();

  return [=]() -> int {
    if (tlist->parsed()) return CmdTemplateList(*api, *project);
    if (tset->parsed()) return CmdTemplateSet(*api, *project, *ta);
    if (tdelete->parsed()) {
      auto r = Call(*api, "DELETE", "/api/v1/projects/" + *project + "/templates/" + ta->name);
      if (!r.ok())
        return Fail(Status::Errorf("projects templates delete {} {}: {}", *project, ta->name, r.status().message()));
      std::cout << fmt::format("template {} of project {} deleted\n", ta->name, *project);
      return 0;
    }
    if (set->parsed()) return CmdSet(*api, *project, *pa);
    if (launch->parsed()) return CmdLaunchThroughControlPlane(*api, *project, *la);
    if (stop->parsed()) return CmdStop(*api, *project, *id, *cancel, *stop_wait);
    if (show->parsed()) {
      auto config = Call(*api, "GET", "/api/v1/projects/" + *project);
      if (!config.ok()) return Fail(config.status());
      auto ws = Call(*api, "GET", "/api/v1/projects/" + *project + "/workspaces");
      if (!ws.ok()) return Fail(ws.status());
      if (*format == "json") {
        std::cout << json{{"project", *config}, {"workspaces", (*ws)["workspaces"]}}.dump(2) << "\n";
        return 0;
      }
      std::cout << fmt::format("project {}: data plane {}, tiers {} (default {}), up to {} workers, datasets {}\n",
                               *project, (*config)["dataPlane"].get<std::string>(),
                               fmt::join((*config)["tiers"].get<std::vector<std::string>>(), ","),
                               (*config)["defaultTier"].get<std::string>(), (*config)["maxWorkers"].get<int>(),
                               fmt::join((*config)["datasets"].get<std::vector<std::string>>(), ","));
      PrintWorkspaces((*ws)["workspaces"]);
      return 0;
    }
    return -1;
  };
}

}  // namespace hpc::cli
