// What one reconcile pass reads and writes of its resources: the cluster's, nodesets' and
// workspaces' specs, and their status. On one machine these are files (store.h); on
// Kubernetes they are custom resources and their status subresources (kubernetes/kubernetes_store.h).
#pragma once

#include <set>
#include <string>
#include <vector>

#include "api/types.h"
#include "common/result.h"

namespace hpc::op {

class ReconcileStore {
 public:
  virtual ~ReconcileStore() = default;
  // Specs, each with its last written status.
  virtual Result<api::SlurmCluster> LoadCluster() const = 0;
  virtual Result<std::vector<api::NodeSet>> LoadNodeSets() const = 0;
  virtual Result<std::vector<api::Workspace>> LoadWorkspaces() const = 0;
  // A nodeset's last written status (empty when none), also for workspaces' nodesets.
  virtual api::NodeSetStatus LoadNodeSetStatus(const std::string& name) const = 0;
  // NodeSets that exist but that the last LoadNodeSets refused, with no earlier spec of theirs
  // to go on (Kubernetes: one made invalid while no operator ran): their workers are left as they
  // are, never taken for those of a deleted nodeset.
  virtual std::set<std::string> RefusedNodeSets() const { return {}; }

  virtual Status SaveClusterStatus(const api::SlurmClusterStatus& s) const = 0;
  virtual Status SaveNodeSetStatus(const std::string& name, const api::NodeSetStatus& s) const = 0;
  virtual Status SaveWorkspaceStatus(const std::string& name, const api::WorkspaceStatus& s) const = 0;
  virtual Status DeleteWorkspace(const std::string& name) const = 0;
};

}  // namespace hpc::op
