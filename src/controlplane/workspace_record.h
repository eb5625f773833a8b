// Workspaces as the control plane sees them. A project's configuration says where its
// workspaces run (a data plane) and what they may be (tiers, worker counts, lifetimes,
// datasets, who administers Slurm); a launch request names what one user wants within it. The
// control plane builds the desired workspace from the two, its data plane's agent applies it
// and reports the phase back.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::cp {

struct ProjectConfig {
  std::string name;
  std::string data_plane;
  std::string default_tier = "small";
  std::vector<std::string> tiers;  // tiers a launch may ask for; always includes default_tier
  int max_workers = 2;             // the most a launch may ask for
  int64_t idle_timeout_seconds = 300;
  int64_t token_lifetime_seconds = 8 * 3600;
  std::vector<std::string> datasets;    // mounted at /datasets/<name>; default: the project's own
  std::vector<std::string> sys_admins;  // their workspaces carry Slurm's administrator level
  // The workspace compute environment its login pods run (an Environment of the data plane);
  // empty: the cluster's own.
  std::string workspace_environment;
  int64_t updated_at = 0;
};

struct WorkspaceRecord {
  std::string id;
  std::string project;
  std::string data_plane;
  std::string user;  // platform user (the API token's subject)
  int64_t uid = 0;   // the same on every data plane
  bool admin = false;
  std::string tier;
  int max_workers = 1;
  int64_t idle_timeout_seconds = 300;
  int64_t token_lifetime_seconds = 8 * 3600;
  std::vector<std::string> datasets;
  std::string environment;          // the project's workspace environment when launched
  std::string desired = "Running";  // Running | Stopped
  bool cancel_jobs = false;         // when stopping: cancel its jobs rather than wait for them
  std::string phase = "Pending";    // reported by the agent: Pending | Ready | Stopping | Stopped | Failed
  std::string message;
  int64_t created_at = 0;
  int64_t updated_at = 0;
  // Nothing left for the agent to do: stopped on purpose and gone from the data plane.
  bool Settled() const { return desired == "Stopped" && phase == "Stopped"; }
};

// Parses a project configuration body; errors read "field: why".
Result<ProjectConfig> ProjectConfigFromJson(const std::string& name, const nlohmann::json& j);
nlohmann::json ToJson(const ProjectConfig& p);

// Builds the desired workspace for `user` from a launch request body and the project's
// configuration; errors read "field: why". The uid is filled in by the caller.
Result<WorkspaceRecord> BuildWorkspace(const ProjectConfig& project, const std::string& user,
                                       const nlohmann::json& request);
nlohmann::json ToJson(const WorkspaceRecord& w);
Result<WorkspaceRecord> WorkspaceRecordFromJson(const nlohmann::json& j);

bool ValidPhase(const std::string& phase);

}  // namespace hpc::cp
