// Workspaces: what a workspace implies (its nodeset and partition, its user's entry), and how
// it is stored. Pure functions; the reconciler and the CLI share them so both see the same
// derived nodeset.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/types.h"
#include "common/result.h"
#include "operator/builders.h"

namespace hpc::op {

// The nodeset a workspace owns: named like the workspace, autoscaled from zero up to
// maxWorkers with the tier's shape, its partition open only to the user's private group and
// the admin group, draining while the workspace stops and pinned to zero once its jobs are gone.
api::NodeSet WorkspaceNodeSet(const api::Workspace& w, bool jobs_gone);

// A workspace's project dataset: mounted at /datasets/<name>, owned by its group.
api::Dataset WorkspaceDataset(const api::Workspace& w, const std::string& dataset);
// One group per project dataset the workspaces mount; its members are the users of the
// workspaces that mount it (admins join in BuildUsersConfigMap). A user who leaves the project
// leaves the group with their last workspace.
std::vector<DatasetGroup> WorkspaceDatasetGroups(const std::vector<api::Workspace>& ws);

// Users the workspaces of a cluster add to slurm-users (one entry per user).
std::vector<api::ClusterUser> WorkspaceUsers(const std::vector<api::Workspace>& ws);

nlohmann::json WorkspaceSpecJson(const api::Workspace& w);
nlohmann::json WorkspaceStatusJson(const api::WorkspaceStatus& s);
// The local store's record (written by hpcplane itself; a resource from a user goes through
// api::DecodeWorkspace instead).
Result<api::Workspace> WorkspaceFromJson(const nlohmann::json& spec, const nlohmann::json& status);
api::WorkspaceStatus WorkspaceStatusFromJson(const nlohmann::json& status);

// Checks a workspace before anything is created; errors name the field and the rule.
Status ValidateWorkspace(const api::Workspace& w);

}  // namespace hpc::op
