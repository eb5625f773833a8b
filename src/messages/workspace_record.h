// A workspace as the control plane wants it on a data plane (built from a project's
// configuration and a launch request: server/project_config.h): what the server stores and
// dispatches, and what the data plane's agent applies and reports the phase of
// (agent/workspace_apply.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::cp {

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

nlohmann::json ToJson(const WorkspaceRecord& w);
Result<WorkspaceRecord> WorkspaceRecordFromJson(const nlohmann::json& j);

bool ValidPhase(const std::string& phase);

}  // namespace hpc::cp
