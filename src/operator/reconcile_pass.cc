#include "operator/reconcile_pass.h"

#include <sys/stat.h>

#include <algorithm>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/jwt.h"
#include "operator/conditions.h"
#include "operator/node_snapshot.h"
#include "operator/partition_sync.h"
#include "operator/workspace.h"
#include "slurm/squeue_jobs.h"

namespace hpc::op {
namespace {

// Associations slurmdbd should hold: cluster users in account "default", workspace users in
// their project's account.
std::vector<Association> WantedAssociations(const api::SlurmCluster& c, const std::vector<api::Workspace>& ws) {
  std::vector<Association> out;
  for (const auto& u : c.spec.users) out.push_back({u.name, "default", u.admin});
  for (const auto& w : ws) out.push_back({w.spec.user.name, w.spec.project, w.spec.user.admin});
  return out;
}

}  // namespace

std::string ChangeStamp(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& path : paths) {
    struct stat st {};
    out += ::stat(path.c_str(), &st) == 0 ? fmt::format("{}.{};", st.st_mtim.tv_sec, st.st_mtim.tv_nsec) : "-;";
  }
  return out;
}

PassOutcome ReconcileOnce(const ReconcileStore& store, runtime::PodRuntime& rt, ClusterReconciler& cluster_rec,
                          NodeSetReconciler& nodeset_rec, WorkspaceReconciler& workspace_rec,
                          AccountingSync& accounting, OwnershipLedger* ledger, JobListing* listing,
                          DaemonMetrics* metrics) {
  PassOutcome outcome;
  auto c = store.LoadCluster();
  auto stored = store.LoadNodeSets();
  auto workspaces = store.LoadWorkspaces();
  if (!c.ok() || !stored.ok() || !workspaces.ok()) {
    spdlog::error("store: {}", !c.ok()        ? c.status().message()
                               : !stored.ok() ? stored.status().message()
                                              : workspaces.status().message());
    return outcome;
  }
  // slurm.conf sees every workspace's partition (draining ones included).
  std::vector<api::NodeSet> config_nodesets = *stored;
  for (const auto& w : *workspaces) {
    // A released workspace (stopping, workers gone) no longer has a partition in Slurm's config.
    if (!(w.spec.stopping && w.status.released)) config_nodesets.push_back(WorkspaceNodeSet(w, false));
  }
  api::SlurmClusterStatus cst =
      cluster_rec.Reconcile(*c, config_nodesets, WorkspaceUsers(*workspaces), WorkspaceDatasetGroups(*workspaces));
  (void)store.SaveClusterStatus(cst);
  const auto* ready = FindCondition(cst.conditions, "Ready");
  bool converged = ready && ready->status == "True";

  // One node and one job listing per pass, shared by every nodeset and workspace; nodes first
  // (node_snapshot.h says why).
  std::optional<NodeSnapshot> snapshot;
  if (cluster_rec.reader()) snapshot.emplace(cluster_rec.reader());
  slurm::SlurmReader* reader = snapshot ? &*snapshot : nullptr;
  const std::vector<slurm::SlurmJob>* jobs =
      listing->Get(cluster_rec.reader() != nullptr, [&] { return slurm::SqueueJobs(&rt, ControllerPodName(*c)); });
  std::optional<std::vector<slurm::SlurmNode>> nodes;
  std::optional<PendingByPartition> pending;
  if (jobs) pending = GroupPending(*jobs);
  outcome.idle =
      jobs != nullptr && std::none_of(jobs->begin(), jobs->end(), [](const auto& j) { return !j.Finished(); });
  std::optional<std::vector<std::string>> partitions;
  if (reader && !workspaces->empty()) {
    auto n = reader->Nodes();
    if (n.ok()) nodes = std::move(*n);
  }
  if (reader && cluster_rec.controller_ready()) {
    // Users changes are remembered until applied: AllowGroups must see a new user.
    bool users_changed = cluster_rec.TakeUsersChanged();
    if (Status s = SyncPartitions(config_nodesets, reader, cluster_rec.control(), users_changed, ledger); !s.ok()) {
      spdlog::warn("partitions: {}", s.message());
      if (users_changed) cluster_rec.MarkUsersChanged();
    }
    // Read after the sync: a released workspace's partition is gone from here once deleted.
    bool any_released = std::any_of(workspaces->begin(), workspaces->end(),
                                    [](const api::Workspace& w) { return w.spec.stopping && w.status.released; });
    if (any_released) {
      if (auto parts = reader->Partitions(); parts.ok()) {
        partitions.emplace();
        for (const auto& p : *parts) partitions->push_back(p.name);
      }
    }
  }
  // Before the nodesets: a nodeset reported ready (what `up` waits for) implies its users'
  // associations exist, which AccountingStorageEnforce needs before the first sbatch.
  if (c->spec.accounting.enabled && cluster_rec.slurmdbd_ready() && cluster_rec.controller_ready()) {
    if (Status s = accounting.Sync(c->metadata.name, WantedAssociations(*c, *workspaces), ledger); !s.ok()) {
      spdlog::warn("accounting: {}", s.message());
    }
  }

  // Nodesets: stored ones, then the workspaces' (pinned to zero once a stopping one has no jobs).
  std::vector<api::NodeSet> nodesets = *stored;
  for (const auto& w : *workspaces) {
    auto active = ActiveJobs(jobs, w.metadata.name);
    api::NodeSet ns = WorkspaceNodeSet(w, active && *active == 0);
    ns.status = store.LoadNodeSetStatus(ns.metadata.name);
    nodesets.push_back(std::move(ns));
  }
  std::set<std::string> known;
  std::map<std::string, api::NodeSetStatus> statuses;
  int nodeset_errors = 0;
  outcome.any_autoscaled = false;
  for (const auto& ns : nodesets) {
    known.insert(ns.metadata.name);
    outcome.any_autoscaled = outcome.any_autoscaled || IsAutoscaled(ns);
    if (!cluster_rec.controller_ready()) continue;
    nodeset_rec.set_controller_started_at(cluster_rec.controller_started_at());
    api::NodeSetStatus nst = nodeset_rec.Reconcile(*c, ns, reader, pending ? &*pending : nullptr);
    nodeset_errors += nodeset_rec.last_errors();
    (void)store.SaveNodeSetStatus(ns.metadata.name, nst);
    statuses[ns.metadata.name] = nst;
    if (nst.replicas != nst.desired || nst.ready != nst.desired) converged = false;
    // Workers' health reports arrive through Slurm's node list, which an idle cluster does not
    // read: while there are workers, read it at least every health check interval.
    if (c->spec.health_checks.enabled && nst.replicas > 0) {
      std::chrono::seconds every(c->spec.health_checks.interval_seconds);
      outcome.duty_in = outcome.duty_in ? std::min(*outcome.duty_in, every) : every;
    }
  }

  if (cluster_rec.controller_ready()) {
    for (const auto& w : *workspaces) {
      WorkspaceView view;
      view.jobs = jobs;
      view.nodes = nodes ? &*nodes : nullptr;
      view.nodeset = statuses.count(w.metadata.name) ? &statuses[w.metadata.name] : nullptr;
      view.accounting_ready = !c->spec.accounting.enabled || accounting.Synced(w.spec.user.name);
      view.users_ready = !cluster_rec.users_pending();
      view.partitions = partitions ? &*partitions : nullptr;
      WorkspaceOutcome out = workspace_rec.Reconcile(*c, w, view);
      if (out.remove) {
        spdlog::info("workspace {} stopped and removed", w.metadata.name);
        (void)store.DeleteWorkspace(w.metadata.name);
        known.erase(w.metadata.name);
        continue;
      }
      (void)store.SaveWorkspaceStatus(w.metadata.name, out.status);
      if (out.status.phase != "Ready") converged = false;
      if (out.status.token_expires > 0) {
        std::chrono::seconds renew_in(std::max<int64_t>(0, TokenRenewAt(w, out.status) - jwt::UnixNow()));
        outcome.duty_in = outcome.duty_in ? std::min(*outcome.duty_in, renew_in) : renew_in;
      }
    }
  }

  // Workers of nodesets that were deleted from the store.
  auto pods = rt.ListPods({{kLabelComponent, "worker"}});
  if (pods.ok() && cluster_rec.controller_ready()) {
    std::set<std::string> orphaned;
    for (const auto& pod : *pods) {
      auto it = pod.labels.find(kLabelNodeSet);
      if (it != pod.labels.end() && !known.count(it->second)) orphaned.insert(it->second);
    }
    for (const auto& name : orphaned) {
      api::NodeSet gone;
      gone.metadata.name = name;
      (void)nodeset_rec.RemoveNodeSet(*c, gone, cluster_rec.reader());
    }
  }
  if (metrics) {
    std::vector<DaemonMetrics::NodeSetView> views;
    std::set<std::string> workspace_partitions;
    for (const auto& w : *workspaces) workspace_partitions.insert(w.metadata.name);
    for (const auto& ns : nodesets) {
      auto it = statuses.find(ns.metadata.name);
      if (it != statuses.end())
        views.push_back({ns.metadata.name, workspace_partitions.count(ns.metadata.name) > 0, &it->second});
    }
    metrics->ObserveNodeSets(views, jobs, workspace_partitions);
    metrics->ObserveReconcileErrors("cluster", cluster_rec.last_errors());
    metrics->ObserveReconcileErrors("nodeset", nodeset_errors);
    if (auto all = rt.ListPods(); all.ok()) metrics->ObservePods(*all);
  }
  outcome.converged = converged;
  return outcome;
}

void GiveDatasetsTheirGroups(const Store& store, const platform::Catalog& catalog) {
  auto workspaces = store.LoadWorkspaces();
  if (!workspaces.ok()) return;
  for (auto w : *workspaces) {
    bool changed = false;
    for (const auto& d : w.spec.datasets) {
      if (w.spec.dataset_gids.count(d)) continue;
      auto gid = catalog.DatasetGid(d);
      if (!gid.ok()) {
        spdlog::error("workspace {}: dataset {}: {}", w.metadata.name, d, gid.status().message());
        continue;
      }
      w.spec.dataset_gids[d] = *gid;
      changed = true;
    }
    if (changed && store.SaveWorkspace(w).ok())
      spdlog::info("workspace {}: datasets now belong to their project groups", w.metadata.name);
  }
}

}  // namespace hpc::op
