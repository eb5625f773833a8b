#include "operator/reconcile_pass.h"

#include <sys/stat.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/jwt.h"
#include "operator/conditions.h"
#include "operator/dataset_volume.h"
#include "operator/health_policy.h"
#include "operator/node_snapshot.h"
#include "operator/partition_sync.h"
#include "operator/steps.h"
#include "operator/workspace.h"
#include "slurm/config.h"
#include "slurm/health_check.h"
#include "slurm/squeue_jobs.h"

namespace hpc::op {
namespace {

// Associations slurmdbd should hold: cluster users in their account ("default" unless the spec
// names one), workspace users in their project's account.
std::vector<Association> WantedAssociations(const api::SlurmCluster& c, const std::vector<api::Workspace>& ws) {
  std::vector<Association> out;
  for (const auto& u : c.spec.users) out.push_back({u.name, u.account.empty() ? "default" : u.account, u.admin});
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

namespace {

// What the phases of one pass share: each phase reads what the ones before it saw and decided.
class Pass {
 public:
  Pass(const ReconcileStore& store, ClusterControllers& ctl, DaemonMetrics* metrics)
      : store_(store), ctl_(ctl), metrics_(metrics) {}

  PassOutcome Run() {
    RunSteps("reconcile pass", {
                                   {"load", [this] { return Load(); }, true},
                                   {"cluster", [this] { return Cluster(); }},
                                   {"snapshot", [this] { return Snapshot(); }},
                                   {"partitions", [this] { return Partitions(); }},
                                   {"accounting", [this] { return Accounting(); }},
                                   {"nodesets", [this] { return NodeSets(); }},
                                   {"datasets", [this] { return Datasets(); }},
                                   {"workspaces", [this] { return Workspaces(); }},
                                   {"orphans", [this] { return Orphans(); }},
                                   {"report", [this] { return Report(); }},
                               });
    if (!loaded_) return PassOutcome{};
    outcome_.converged = converged_ && !unsaved_;
    return outcome_;
  }

 private:
  // The specs with their last status; a store that cannot be read ends the pass.
  Status Load() {
    ASSIGN_OR_RETURN(cluster_, store_.LoadCluster());
    ASSIGN_OR_RETURN(stored_, store_.LoadNodeSets());
    ASSIGN_OR_RETURN(workspaces_, store_.LoadWorkspaces());
    loaded_ = true;
    // slurm.conf sees every workspace's partition (draining ones included); a released workspace
    // (stopping, workers gone) no longer has one.
    config_nodesets_ = stored_;
    for (const auto& w : workspaces_) {
      if (!(w.spec.stopping && w.status.released)) config_nodesets_.push_back(WorkspaceNodeSet(w, false));
    }
    return Status::Ok();
  }

  // The cluster's own components (munge or sackd, slurmdbd, slurmctld, slurmrestd, login) and its status.
  Status Cluster() {
    api::SlurmClusterStatus st = ctl_.cluster->Reconcile(cluster_, config_nodesets_, WorkspaceUsers(workspaces_),
                                                         WorkspaceDatasetGroups(workspaces_));
    const auto* ready = FindCondition(st.conditions, "Ready");
    converged_ = ready && ready->status == "True";
    return Saved(store_.SaveClusterStatus(st), "cluster status");
  }

  // One node and one job listing per pass, shared by every nodeset and workspace; nodes first
  // (node_snapshot.h says why).
  Status Snapshot() {
    if (ctl_.cluster->reader()) snapshot_.emplace(ctl_.cluster->reader());
    reader_ = snapshot_ ? &*snapshot_ : nullptr;
    jobs_ = ctl_.listing.Get(ctl_.cluster->reader() != nullptr,
                             [this] { return slurm::SqueueJobs(ctl_.rt, CommandPodOf(ctl_, cluster_)); });
    if (jobs_) pending_ = GroupPending(*jobs_);
    outcome_.idle =
        jobs_ != nullptr && std::none_of(jobs_->begin(), jobs_->end(), [](const auto& j) { return !j.Finished(); });
    if (reader_ && !workspaces_.empty()) {
      if (auto n = reader_->Nodes(); n.ok()) nodes_ = std::move(*n);
    }
    return Status::Ok();
  }

  // hpcplane's partitions in Slurm, then (for released workspaces) which partitions remain.
  Status Partitions() {
    if (!reader_ || !ctl_.cluster->controller_ready()) return Status::Ok();
    // Users changes are remembered until applied: AllowGroups must see a new user.
    const bool users_changed = ctl_.cluster->TakeUsersChanged();
    Status synced = SyncPartitions(config_nodesets_, reader_, ctl_.cluster->control(), users_changed, ctl_.ledger.get(),
                                   slurm::ClusterSetsDefaultMemory(cluster_));
    if (!synced.ok() && users_changed) ctl_.cluster->MarkUsersChanged();
    // Read after the sync: a released workspace's partition is gone from here once deleted.
    const bool any_released = std::any_of(workspaces_.begin(), workspaces_.end(),
                                          [](const api::Workspace& w) { return w.spec.stopping && w.status.released; });
    if (any_released) {
      if (auto parts = reader_->Partitions(); parts.ok()) {
        partitions_.emplace();
        for (const auto& p : *parts) partitions_->push_back(p.name);
      }
    }
    return synced;
  }

  // Before the nodesets: a nodeset reported ready (what `up` waits for) implies its users'
  // associations exist, which AccountingStorageEnforce needs before the first sbatch.
  Status Accounting() {
    if (!cluster_.spec.accounting.enabled || !ctl_.cluster->slurmdbd_ready() || !ctl_.cluster->controller_ready()) {
      return Status::Ok();
    }
    // Not before slurmctld's pod has the users' file (on Kubernetes a kubelet updates it up to a
    // minute later): an association that arrives for a name slurmctld cannot resolve keeps no
    // uid (until its hourly retry), and the user's jobs run under no account at all.
    if (!ctl_.cluster->UsersFileCurrent()) return Status::Ok();
    return ctl_.accounting->Sync(cluster_.metadata.name, WantedAssociations(cluster_, workspaces_), ctl_.ledger.get());
  }

  // Stored nodesets, then the workspaces' (pinned to zero once a stopping one has no jobs).
  Status NodeSets() {
    nodesets_ = stored_;
    for (const auto& w : workspaces_) {
      auto active = ActiveJobs(jobs_, w.metadata.name);
      api::NodeSet ns = WorkspaceNodeSet(w, active && *active == 0);
      ns.status = store_.LoadNodeSetStatus(ns.metadata.name);
      nodesets_.push_back(std::move(ns));
    }
    for (const auto& name : store_.RefusedNodeSets()) known_.insert(name);
    Status saved = Status::Ok();
    for (const auto& ns : nodesets_) {
      known_.insert(ns.metadata.name);
      outcome_.any_autoscaled = outcome_.any_autoscaled || IsAutoscaled(ns);
      if (!ctl_.cluster->controller_ready()) continue;
      ctl_.nodesets->set_controller_started_at(ctl_.cluster->controller_started_at());
      ctl_.nodesets->set_controller_current(ctl_.cluster->controller_current());
      ctl_.nodesets->set_pending_predates_nodes(ctl_.listing.reused());
      api::NodeSetStatus st = ctl_.nodesets->Reconcile(cluster_, ns, reader_, pending_ ? &*pending_ : nullptr);
      if (ctl_.nodesets->held_for_fresh_listing()) ctl_.listing.Invalidate();
      nodeset_errors_ += ctl_.nodesets->last_errors();
      KeepFirst(&saved, Saved(store_.SaveNodeSetStatus(ns.metadata.name, st), "nodeset " + ns.metadata.name));
      statuses_[ns.metadata.name] = st;
      if (st.replicas != st.desired || st.ready != st.desired) converged_ = false;
      // Workers' health reports arrive through Slurm's node list, which an idle cluster does not
      // read: while there are workers, read it at least every health check interval.
      if (cluster_.spec.health_checks.enabled && st.replicas > 0) {
        DutyIn(std::chrono::seconds(cluster_.spec.health_checks.interval_seconds));
      }
    }
    return saved;
  }

  // Workspaces' project datasets: recorded before their volumes are made, and each recorded one
  // kept following the cluster's storage policy after its workspaces are gone (its volume is
  // users' data: with retainOnDelete it must outlive the SlurmCluster as the others do).
  Status Datasets() {
    Status out = Status::Ok();
    for (const auto& w : workspaces_) {
      for (const auto& d : w.spec.datasets) {
        const api::Dataset dataset = WorkspaceDataset(w, d);
        KeepFirst(&out, ctl_.ledger->AddDataset(dataset.name, dataset.group_gid));
      }
    }
    if (!out.ok()) return out;  // nothing made that the record does not hold
    for (const auto& [name, gid] : ctl_.ledger->datasets()) {
      KeepFirst(&out, EnsureDatasetVolume(ctl_.rt, cluster_, {name, "/datasets/" + name, "", gid}));
    }
    return out;
  }

  // Each workspace's token, login pod and lifecycle; a stopped one is removed from the store.
  Status Workspaces() {
    if (!ctl_.cluster->controller_ready()) return Status::Ok();
    Status saved = Status::Ok();
    for (const auto& w : workspaces_) {
      WorkspaceView view;
      view.jobs = jobs_;
      view.nodes = nodes_ ? &*nodes_ : nullptr;
      view.nodeset = statuses_.count(w.metadata.name) ? &statuses_[w.metadata.name] : nullptr;
      view.accounting_ready = !cluster_.spec.accounting.enabled || ctl_.accounting->Synced(w.spec.user.name);
      view.users_ready = !ctl_.cluster->users_pending();
      view.controller_current = ctl_.cluster->controller_current();
      view.partitions = partitions_ ? &*partitions_ : nullptr;
      WorkspaceOutcome out = ctl_.workspaces->Reconcile(cluster_, w, view);
      if (out.remove) {
        Status deleted = Saved(store_.DeleteWorkspace(w.metadata.name), "workspace " + w.metadata.name);
        if (deleted.ok()) spdlog::info("workspace {} stopped and removed", w.metadata.name);
        KeepFirst(&saved, deleted);
        known_.erase(w.metadata.name);
        continue;
      }
      KeepFirst(&saved, Saved(store_.SaveWorkspaceStatus(w.metadata.name, out.status), "workspace " + w.metadata.name));
      if (out.status.phase != "Ready") converged_ = false;
      if (out.status.token_expires > 0) {
        DutyIn(std::chrono::seconds(std::max<int64_t>(0, TokenRenewAt(w, out.status) - jwt::UnixNow())));
      }
    }
    return saved;
  }

  // Workers of nodesets that were deleted from the store (with the same safety rules).
  Status Orphans() {
    if (!ctl_.cluster->controller_ready()) return Status::Ok();
    ASSIGN_OR_RETURN(auto pods, ctl_.rt->ListPods({{kLabelComponent, "worker"}}));
    std::set<std::string> orphaned;
    for (const auto& pod : pods) {
      auto it = pod.labels.find(kLabelNodeSet);
      if (it != pod.labels.end() && !known_.count(it->second)) orphaned.insert(it->second);
    }
    Status removed = Status::Ok();
    for (const auto& name : orphaned) {
      api::NodeSet gone;
      gone.metadata.name = name;
      KeepFirst(&removed, ctl_.nodesets->RemoveNodeSet(cluster_, gone, ctl_.cluster->reader()));
    }
    return removed;
  }

  Status Report() {
    if (!metrics_) return Status::Ok();
    std::vector<DaemonMetrics::NodeSetView> views;
    std::set<std::string> workspace_partitions;
    for (const auto& w : workspaces_) workspace_partitions.insert(w.metadata.name);
    for (const auto& ns : nodesets_) {
      auto it = statuses_.find(ns.metadata.name);
      if (it != statuses_.end()) {
        views.push_back({ns.metadata.name, workspace_partitions.count(ns.metadata.name) > 0, &it->second});
      }
    }
    metrics_->ObserveNodeSets(views, jobs_, workspace_partitions);
    if (reader_) {  // the pass's snapshot: no query of its own; nodes unknown: the last values stand
      if (auto nodes = reader_->Nodes(); nodes.ok()) metrics_->ObserveGpus(GpuWorkers(*nodes, workspace_partitions));
    }
    metrics_->ObserveReconcileErrors("cluster", ctl_.cluster->last_errors());
    metrics_->ObserveReconcileErrors("nodeset", nodeset_errors_);
    ASSIGN_OR_RETURN(auto all, ctl_.rt->ListPods());
    metrics_->ObservePods(all);
    return Status::Ok();
  }

  // The cluster nodesets' workers with the GPUs of their last health report, unless it is stale
  // (health_policy.h); a node belongs to the nodeset among its features. Workspaces' workers are
  // left out: their names carry user names.
  std::vector<DaemonMetrics::GpuWorkerView> GpuWorkers(const std::vector<slurm::SlurmNode>& nodes,
                                                       const std::set<std::string>& workspaces) const {
    std::vector<DaemonMetrics::GpuWorkerView> out;
    const int64_t oldest = jwt::UnixNow() - StaleReportAfter(cluster_.spec.health_checks);
    for (const auto& n : nodes) {
      slurm::HealthReport report = slurm::ParseHealthReport(n.extra);
      if (report.gpus.empty() || report.at < oldest) continue;
      for (const auto& ns : nodesets_) {
        if (!n.features.count(ns.metadata.name) || workspaces.count(ns.metadata.name)) continue;
        out.push_back({ns.metadata.name, n.name, std::move(report.gpus)});
        break;
      }
    }
    return out;
  }

  // A status the store did not take: the pass is not converged, so the next one writes it again.
  Status Saved(Status s, const std::string& what) {
    if (s.ok()) return s;
    unsaved_ = true;
    return s.WithContext(what);
  }
  void DutyIn(std::chrono::seconds in) { outcome_.duty_in = outcome_.duty_in ? std::min(*outcome_.duty_in, in) : in; }

  // A phase goes on after one of its actions fails; the first failure is what the phase returns
  // (RunSteps logs it), later ones are logged here (waiting ones are not failures).
  static void KeepFirst(Status* first, Status s) {
    if (s.ok()) return;
    if (first->ok()) {
      *first = std::move(s);
    } else if (s.code() != StatusCode::kFailedPrecondition) {
      spdlog::error("reconcile pass: {}", s.message());
    }
  }

  const ReconcileStore& store_;
  ClusterControllers& ctl_;
  DaemonMetrics* metrics_;
  PassOutcome outcome_;
  bool loaded_ = false;
  bool converged_ = false;
  bool unsaved_ = false;
  api::SlurmCluster cluster_;
  std::vector<api::NodeSet> stored_;
  std::vector<api::Workspace> workspaces_;
  std::vector<api::NodeSet> config_nodesets_;  // what slurm.conf describes
  std::optional<NodeSnapshot> snapshot_;
  slurm::SlurmReader* reader_ = nullptr;  // the snapshot; null when Slurm does not answer
  const std::vector<slurm::SlurmJob>* jobs_ = nullptr;
  std::optional<PendingByPartition> pending_;
  std::optional<std::vector<slurm::SlurmNode>> nodes_;
  std::optional<std::vector<std::string>> partitions_;
  std::vector<api::NodeSet> nodesets_;  // stored and workspaces'
  std::set<std::string> known_;
  std::map<std::string, api::NodeSetStatus> statuses_;
  int nodeset_errors_ = 0;
};

}  // namespace

PassOutcome ReconcileOnce(const ReconcileStore& store, ClusterControllers& controllers, DaemonMetrics* metrics) {
  return Pass(store, controllers, metrics).Run();
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
