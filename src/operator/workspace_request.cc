#include "operator/workspace_request.h"

#include <fmt/format.h>

#include "api/validation.h"
#include "operator/store.h"
#include "operator/workspace.h"

namespace hpc::op {

Result<api::Workspace> BuildWorkspace(const api::SlurmCluster& cluster, const platform::Catalog& catalog,
                                      const WorkspaceRequest& r, const std::optional<platform::NodeCapacity>& node) {
  auto slurm_name = platform::DeriveSlurmUserName(r.user);
  if (!slurm_name.ok()) return Status::Errorf("user: {}", slurm_name.status().message());
  ASSIGN_OR_RETURN(platform::PlatformUser user, catalog.FindUser(r.user));
  ASSIGN_OR_RETURN(platform::Tier tier, catalog.FindTier(r.tier));
  if (node) RETURN_IF_ERROR(platform::CheckTierFits(tier, *node));

  api::Workspace w;
  w.metadata.name = r.name.empty() ? api::DefaultWorkspaceName(user.slurm_name, r.project) : r.name;
  w.spec.cluster = cluster.metadata.name;
  // A workspace user's account is the workspace's project (WantedAssociations).
  w.spec.user = {user.slurm_name, user.uid, user.gid, r.admin.value_or(user.IsSysAdmin()), ""};
  w.spec.project = r.project;
  w.spec.tier = tier.name;
  w.spec.resources = {tier.cpus, tier.memory_mib, tier.gpus};
  w.spec.max_workers = r.max_workers;
  w.spec.idle_timeout_seconds = r.idle_timeout_seconds;
  w.spec.token_lifetime_seconds = r.token_lifetime_seconds;
  w.spec.datasets = r.datasets.empty() ? std::vector<std::string>{r.project} : r.datasets;
  w.spec.environment = r.environment;
  if (Status s = ValidateWorkspace(w); !s.ok()) {
    if (r.name.empty()) return Status::Errorf("{} (choose another workspace id)", s.message());
    return s;
  }
  for (const auto& d : w.spec.datasets) {
    ASSIGN_OR_RETURN(w.spec.dataset_gids[d], catalog.DatasetGid(d));
  }
  RETURN_IF_ERROR(api::ValidateAgainstCluster(WorkspaceNodeSet(w, false), cluster));
  for (const auto& u : cluster.spec.users) {
    if (u.name == w.spec.user.name && u.uid != w.spec.user.uid) {
      return Status::Errorf("user {} is a cluster user with uid {} but the catalog gives uid {}", u.name, u.uid,
                            w.spec.user.uid);
    }
  }
  return w;
}

Result<api::Workspace> CreateWorkspace(const ClusterPaths& p, const platform::Catalog& catalog,
                                       const WorkspaceRequest& r) {
  Store store(p.Dir());
  ASSIGN_OR_RETURN(api::SlurmCluster cluster, store.LoadCluster());
  ASSIGN_OR_RETURN(api::Workspace w, BuildWorkspace(cluster, catalog, r, platform::LocalNodeCapacity()));
  if (store.HasWorkspace(w.metadata.name)) {
    return Status::Errorf("workspace \"{}\" already exists (see `hpcplane workspace list`)", w.metadata.name);
  }
  if (store.LoadNodeSet(w.metadata.name).ok()) {
    return Status::Errorf("workspace \"{}\": a nodeset of that name exists; choose another workspace id",
                          w.metadata.name);
  }
  RETURN_IF_ERROR(store.SaveWorkspace(w));
  return w;
}

}  // namespace hpc::op
