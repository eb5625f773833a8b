// The agent's half of workspace dispatch: bring one workspace the control plane wants on this
// data plane to its desired state (created, or stopping) through the data plane's own path, and
// say which phase it is in. Only workspaces the control plane lists are touched; ones launched on
// the data plane itself are left alone.
#pragma once

#include <string>

#include "agent/data_plane_access.h"
#include "messages/workspace_record.h"

namespace hpc::cp {

struct WorkspacePhase {
  std::string phase, message;
};

WorkspacePhase ApplyWorkspaceRecord(DataPlaneAccess& dp, const WorkspaceRecord& w);

}  // namespace hpc::cp
