// `hpcplane operator`: the reconcilers of a data plane over the Kubernetes API. Informers list
// and watch the custom resources (SlurmCluster, NodeSet, Workspace) and the objects it made
// (pods, config maps, secrets, services, claims), in every namespace or in one, and keep them in
// memory. Each change queues the SlurmCluster it belongs to in a rate-limited work queue
// (work_queue.h), and workers run the same reconcile pass as the single-machine daemon
// (operator/reconcile_pass.h) for one SlurmCluster at a time, with the KubernetesRuntime in
// place of the local one, reading from the informers' caches. Replicas elect a leader with a
// Lease; only the leader acts.
#pragma once

#include <chrono>
#include <string>

#include "kubernetes/kubernetes_render.h"

namespace hpc::kube {

struct OperatorOptions {
  std::string kubeconfig;       // empty: the pod's service account (in-cluster)
  std::string namespace_name;   // the namespace whose resources it reconciles; empty: every namespace
  std::string lease_namespace;  // where replicas elect their leader; empty: the context's or the pod's
  std::string identity;         // this replica's name in the Lease; empty: hostname and pid
  RenderOptions objects;        // images, environments and storage classes of what it creates
  std::string state_dir = "/var/lib/hpcplane-operator";  // what it owns in Slurm (ownership ledger)
  std::chrono::seconds lease_duration{15};
  std::chrono::milliseconds resync{2000};  // a pass of each cluster at least this often while leading
  int workers = 2;  // SlurmClusters reconciled at the same time (one pass of a cluster at a time)
};

// Runs until SIGTERM or SIGINT; returns the process's exit code.
int RunOperator(const OperatorOptions& options);

}  // namespace hpc::kube
