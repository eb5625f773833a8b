// Projects as the control plane sees them: where a project's workspaces run (a data plane) and
// what they may be (tiers, worker counts, lifetimes, datasets, who administers Slurm). A launch
// request names what one user wants within it; the server builds the desired workspace
// (messages/workspace_record.h) from the two, and its data plane's agent applies it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "messages/workspace_record.h"

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

// Parses a project configuration body; errors read "field: why".
Result<ProjectConfig> ProjectConfigFromJson(const std::string& name, const nlohmann::json& j);
nlohmann::json ToJson(const ProjectConfig& p);

// Builds the desired workspace for `user` from a launch request body and the project's
// configuration; errors read "field: why". The uid is filled in by the caller.
Result<WorkspaceRecord> BuildWorkspace(const ProjectConfig& project, const std::string& user,
                                       const nlohmann::json& request);

}  // namespace hpc::cp
