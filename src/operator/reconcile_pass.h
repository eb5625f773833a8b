// One reconcile pass of a data plane: the cluster, its nodesets and its workspaces against
// Slurm, with one node and one job listing shared by all of them. What the operator decides
// lives here and in the reconcilers; src/app/daemon.cc only assembles the pieces and runs the
// loop.
#pragma once

#include <string>
#include <vector>

#include "operator/accounting_sync.h"
#include "operator/cluster_reconciler.h"
#include "operator/daemon_metrics.h"
#include "operator/job_listing.h"
#include "operator/nodeset_reconciler.h"
#include "operator/ownership.h"
#include "operator/pass_schedule.h"
#include "operator/reconcile_store.h"
#include "operator/store.h"
#include "operator/workspace_reconciler.h"
#include "platform/catalog.h"
#include "runtime/pod_runtime.h"

namespace hpc::op {

// One pass over the cluster, its workspaces and nodesets: whether everything converged, whether
// the cluster is idle, and when the next time-based duty (a token's renewal, a health check
// interval) falls due. `metrics` may be null.
PassOutcome ReconcileOnce(const ReconcileStore& store, runtime::PodRuntime& rt, ClusterReconciler& cluster_rec,
                          NodeSetReconciler& nodeset_rec, WorkspaceReconciler& workspace_rec,
                          AccountingSync& accounting, OwnershipLedger* ledger, JobListing* listing,
                          DaemonMetrics* metrics);

// The change probe's stamp (pass_schedule.h): modification times of slurmctld's submit marker
// and of the specs the CLI and the agent write. A few stat(2) calls, no process, no request.
std::string ChangeStamp(const std::vector<std::string>& paths);

// Workspaces stored before project datasets had groups get theirs from the catalog, once.
void GiveDatasetsTheirGroups(const Store& store, const platform::Catalog& catalog);

}  // namespace hpc::op
