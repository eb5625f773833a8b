// Creating a workspace from a request: the one path shared by `hpcplane workspace launch` and
// the data-plane agent applying a workspace the control plane dispatched. Everything is
// checked (user name rule, catalog, tier fit, names, the cluster) before anything is written,
// so a refused request changes nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "common/result.h"
#include "operator/cluster_paths.h"
#include "platform/catalog.h"

namespace hpc::op {

struct WorkspaceRequest {
  std::string user;     // platform user name (must be in the catalog)
  std::string project;  // its dataset is mounted at /datasets/<project>
  std::string tier = "small";
  std::string name;  // workspace id; default <slurm user>-<project>
  int max_workers = 2;
  int64_t idle_timeout_seconds = 300;
  int64_t token_lifetime_seconds = 8 * 3600;
  std::vector<std::string> datasets;  // default: the project's own
  std::string environment;            // the login pod's; default: the cluster's environment
  // Set by the control plane (the project's configuration); otherwise the catalog's role.
  std::optional<bool> admin;
};

// The workspace the request asks for on `cluster`, checked (user name rule, catalog, tier,
// names, the cluster's Slurm) without reading or writing any store; the tier must fit `node`
// when given (the local machine; on Kubernetes the scheduler decides where a pod fits).
Result<api::Workspace> BuildWorkspace(const api::SlurmCluster& cluster, const platform::Catalog& catalog,
                                      const WorkspaceRequest& r, const std::optional<platform::NodeCapacity>& node);

// Validates the request and records the workspace for the operator of cluster `p`.
Result<api::Workspace> CreateWorkspace(const ClusterPaths& p, const platform::Catalog& catalog,
                                       const WorkspaceRequest& r);

}  // namespace hpc::op
