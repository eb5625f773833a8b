// A cluster's controllers: everything one reconcile pass (reconcile_pass.h) drives, built by one
// function for the local daemon (app/daemon.cc) and the Kubernetes operator
// (kubernetes/kubernetes_operator.cc) alike, so that the two wire Slurm's clients the same way. Unit
// tests assemble one on fakes.
#pragma once

#include <memory>
#include <string>

#include "operator/accounting_sync.h"
#include "operator/builders.h"
#include "operator/cluster_reconciler.h"
#include "operator/job_listing.h"
#include "operator/nodeset_reconciler.h"
#include "operator/ownership.h"
#include "operator/slurm_token.h"
#include "operator/workspace_reconciler.h"
#include "runtime/pod_runtime.h"
#include "slurm/slurm_client.h"

namespace hpc::op {

struct ClusterControllers {
  runtime::PodRuntime* rt = nullptr;  // not owned: the runtime outlives its controllers
  // Where Slurm's commands run: the serving controller's pod (the cluster reconciler sets it).
  std::unique_ptr<slurm::CommandPod> command_pod;
  std::unique_ptr<TokenSource> tokens;
  std::unique_ptr<slurm::SlurmControl> control;
  std::unique_ptr<ClusterReconciler> cluster;
  std::unique_ptr<NodeSetReconciler> nodesets;
  std::unique_ptr<WorkspaceReconciler> workspaces;
  std::unique_ptr<AccountingSync> accounting;
  std::unique_ptr<OwnershipLedger> ledger;
  JobListing listing;
};

// The pod Slurm's commands run in: the serving controller's, the primary's where none is kept.
inline std::string CommandPodOf(const ClusterControllers& c, const api::SlurmCluster& cluster) {
  return c.command_pod ? c.command_pod->Get() : ControllerPodName(cluster);
}

// The controllers of cluster `cluster_name` on runtime `rt`: Slurm's actions by scontrol in the
// controller pod, its state through slurmrestd with a JWT from the cluster's key, hpcplane's
// ownership ledger at `ledger_path`. Fails only when the ledger or the runtime cannot be read.
Result<std::unique_ptr<ClusterControllers>> NewClusterControllers(runtime::PodRuntime* rt, const BuildInputs& inputs,
                                                                  const std::string& cluster_name,
                                                                  const std::string& ledger_path);
// `inputs` as the cluster's running pods need them (hpcplane's own upgrade replaces none): each
// environment's image as they run it, and munge on a release with auth/slurm for a cluster made
// with munge (BuildInputs::keep_munge). A cluster with no pod gets `inputs` as they are.
Result<BuildInputs> InputsForRunningCluster(runtime::PodRuntime* rt, const BuildInputs& inputs,
                                            const std::string& cluster_name);
// The same with the ledger kept where `ledger` says.
Result<std::unique_ptr<ClusterControllers>> NewClusterControllers(runtime::PodRuntime* rt, const BuildInputs& inputs,
                                                                  const std::string& cluster_name,
                                                                  LedgerStorage ledger);

}  // namespace hpc::op
