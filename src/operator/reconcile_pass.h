// One reconcile pass of a data plane: the cluster, its nodesets and its workspaces against
// Slurm, with one node and one job listing shared by all of them. A pass is a run of named
// phases (steps.h): load, cluster, snapshot, partitions, accounting, nodesets, workspaces,
// orphans, report. What the operator decides lives here and in the reconcilers; the wiring
// layer (app/) only builds the controllers (cluster_controllers.h) and runs the loop.
#pragma once

#include <string>
#include <vector>

#include "operator/cluster_controllers.h"
#include "operator/daemon_metrics.h"
#include "operator/pass_schedule.h"
#include "operator/reconcile_store.h"
#include "operator/store.h"
#include "platform/catalog.h"

namespace hpc::op {

// One pass over the cluster, its workspaces and nodesets: whether everything converged, whether
// the cluster is idle, and when the next time-based duty (a token's renewal, a health check
// interval) falls due. A phase that fails is logged and the pass goes on with the next (only a
// store that cannot be read ends it); a status that could not be saved leaves the pass
// unconverged, so the next one comes soon and writes it again. `metrics` may be null.
PassOutcome ReconcileOnce(const ReconcileStore& store, ClusterControllers& controllers, DaemonMetrics* metrics);

// The change probe's stamp (pass_schedule.h): modification times of slurmctld's submit marker
// and of the specs the CLI and the agent write. A few stat(2) calls, no process, no request.
std::string ChangeStamp(const std::vector<std::string>& paths);

// Workspaces stored before project datasets had groups get theirs from the catalog, once.
void GiveDatasetsTheirGroups(const Store& store, const platform::Catalog& catalog);

}  // namespace hpc::op
