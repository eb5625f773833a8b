// An in-memory ReconcileStore for unit tests of a reconcile pass: the specs a test puts in, the
// statuses the pass writes, and failures on demand (every read, or every write, fails with the
// status the test sets) to check what a pass does when its store does not answer.
#pragma once

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "operator/reconcile_store.h"

namespace hpc::fakes {

class FakeReconcileStore : public op::ReconcileStore {
 public:
  std::optional<api::SlurmCluster> cluster;
  std::vector<api::NodeSet> nodesets;
  std::vector<api::Workspace> workspaces;
  Status read_error;   // not ok: every Load fails with it
  Status write_error;  // not ok: every Save and Delete fails with it

  // What passes wrote.
  mutable std::optional<api::SlurmClusterStatus> cluster_status;
  mutable std::map<std::string, api::NodeSetStatus> nodeset_status;
  mutable std::map<std::string, api::WorkspaceStatus> workspace_status;
  mutable std::vector<std::string> deleted_workspaces;
  mutable int refused_writes = 0;

  Result<api::SlurmCluster> LoadCluster() const override {
    if (!read_error.ok()) return read_error;
    if (!cluster) return Status::NotFound("no cluster");
    api::SlurmCluster c = *cluster;
    if (cluster_status) c.status = *cluster_status;
    return c;
  }
  Result<std::vector<api::NodeSet>> LoadNodeSets() const override {
    if (!read_error.ok()) return read_error;
    std::vector<api::NodeSet> out = nodesets;
    for (auto& ns : out) ns.status = LoadNodeSetStatus(ns.metadata.name);
    return out;
  }
  Result<std::vector<api::Workspace>> LoadWorkspaces() const override {
    if (!read_error.ok()) return read_error;
    std::vector<api::Workspace> out;
    for (auto w : workspaces) {
      if (std::count(deleted_workspaces.begin(), deleted_workspaces.end(), w.metadata.name)) continue;
      if (auto it = workspace_status.find(w.metadata.name); it != workspace_status.end()) w.status = it->second;
      out.push_back(std::move(w));
    }
    return out;
  }
  api::NodeSetStatus LoadNodeSetStatus(const std::string& name) const override {
    auto it = nodeset_status.find(name);
    return it == nodeset_status.end() ? api::NodeSetStatus{} : it->second;
  }

  Status SaveClusterStatus(const api::SlurmClusterStatus& s) const override {
    RETURN_IF_ERROR(Write());
    cluster_status = s;
    return Status::Ok();
  }
  Status SaveNodeSetStatus(const std::string& name, const api::NodeSetStatus& s) const override {
    RETURN_IF_ERROR(Write());
    nodeset_status[name] = s;
    return Status::Ok();
  }
  Status SaveWorkspaceStatus(const std::string& name, const api::WorkspaceStatus& s) const override {
    RETURN_IF_ERROR(Write());
    workspace_status[name] = s;
    return Status::Ok();
  }
  Status DeleteWorkspace(const std::string& name) const override {
    RETURN_IF_ERROR(Write());
    deleted_workspaces.push_back(name);
    return Status::Ok();
  }

 private:
  Status Write() const {
    if (write_error.ok()) return Status::Ok();
    ++refused_writes;
    return write_error;
  }
};

}  // namespace hpc::fakes
