// The operator's resource store for one cluster: desired specs written by the CLI (apply, up,
// scale) and status written by the operator, as files under the cluster's directory. Specs
// and status are separate files so the two writers never overwrite each other.
#pragma once

#include <string>
#include <vector>

#include "api/types.h"
#include "common/result.h"
#include "operator/reconcile_store.h"

namespace hpc::op {

class Store : public ReconcileStore {
 public:
  explicit Store(std::string cluster_dir) : dir_(std::move(cluster_dir)) {}

  const std::string& dir() const { return dir_; }
  bool HasCluster() const;
  // Spec and the last written status.
  Result<api::SlurmCluster> LoadCluster() const override;
  Result<std::vector<api::NodeSet>> LoadNodeSets() const override;
  Result<api::NodeSet> LoadNodeSet(const std::string& name) const;

  // Writes the spec; bumps metadata.generation when the spec differs from the stored one.
  Status SaveCluster(api::SlurmCluster c) const;
  Status SaveNodeSet(api::NodeSet n) const;
  Status DeleteNodeSet(const std::string& name) const;

  // Workspaces: spec written by the CLI (launch, stop), status by the operator.
  Result<std::vector<api::Workspace>> LoadWorkspaces() const override;
  Result<api::Workspace> LoadWorkspace(const std::string& name) const;
  bool HasWorkspace(const std::string& name) const;
  Status SaveWorkspace(const api::Workspace& w) const;
  Status SaveWorkspaceStatus(const std::string& name, const api::WorkspaceStatus& s) const override;
  Status DeleteWorkspace(const std::string& name) const override;
  // A nodeset's last written status (empty when none).
  api::NodeSetStatus LoadNodeSetStatus(const std::string& name) const override;
  // Stored nodesets plus those workspaces own (with their last status).
  Result<std::vector<api::NodeSet>> LoadAllNodeSets() const;

  Status SaveClusterStatus(const api::SlurmClusterStatus& s) const override;
  Status SaveNodeSetStatus(const std::string& name, const api::NodeSetStatus& s) const override;

 private:
  std::string dir_;
};

}  // namespace hpc::op
