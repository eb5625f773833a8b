// Launching a workspace from the control plane (POST /projects/{p}/workspaces): the project's
// configuration, who it is for (a user launches for themself, an admin for anyone), the request
// against the configuration, a data plane that is Healthy with Slurm, a free id, and the user's
// uid, all before the record is stored for the data plane's agent to apply. The route only
// authenticates, calls Launch and answers by the Status's code.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/project_config.h"
#include "server/store.h"

namespace hpc::cp {

// The project's configuration; NotFound (saying how an admin sets it) when it has none.
Result<ProjectConfig> ConfiguredProject(ProjectStore* store, const std::string& name);

class WorkspaceService {
 public:
  struct Stores {
    ProjectStore* projects;
    WorkspaceStore* workspaces;
    DataPlaneStore* data_planes;
  };
  WorkspaceService(Stores stores, int unreachable_after_seconds, std::function<int64_t()> now);

  // The workspace `body` asks for in `project`, launched by `caller`; stored as Running for
  // its data plane's agent.
  Result<WorkspaceRecord> Launch(const Principal& caller, const std::string& project, const nlohmann::json& body);

 private:
  // Ids are one namespace on a data plane: another project's workspace, running or not, is
  // neither shown nor taken over, and a live one of the same id is not replaced.
  Status IdFree(const WorkspaceRecord& w);

  Stores stores_;
  int unreachable_after_;
  std::function<int64_t()> now_;
};

}  // namespace hpc::cp
