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
#include <functional>
#include <memory>
#include <string>

#include "kubernetes/kubernetes_render.h"
#include "kubernetes/submission_watch.h"
#include "operator/cluster_controllers.h"

namespace hpc::kube {

// How the operator reaches each cluster's Slurm. Left empty, Slurm in the cluster's pods: scontrol
// and squeue by pods/exec in its controller pod, slurmrestd at its pod's address, the submission
// watch's long poll by pods/exec. bench/operator_scale.cc measures the operator's Kubernetes side
// at a thousand workers, more than any machine here runs slurmd for, with a model of Slurm here.
struct SlurmAccess {
  // A cluster's controllers over `rt` (op::NewClusterControllers when empty).
  std::function<Result<std::unique_ptr<op::ClusterControllers>>(runtime::PodRuntime* rt, const op::BuildInputs& inputs,
                                                                const std::string& cluster, op::LedgerStorage ledger)>
      controllers;
  // The submission watch's exec for cluster `ctx`'s controller pod (SubmissionWatch::InControllerPod
  // when empty).
  std::function<SubmissionWatch::Exec(const runtime::kubernetes::ObjectContext& ctx, const std::string& pod)>
      submissions;
};

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
  SlurmAccess slurm;
  // Told of every pass ("namespace/name", how long it took, whether it converged), on the worker
  // that ran it; may be empty.
  std::function<void(const std::string& cluster, std::chrono::steady_clock::duration took, bool converged)> on_pass;
};

// Runs until SIGTERM or SIGINT; returns the process's exit code.
int RunOperator(const OperatorOptions& options);

}  // namespace hpc::kube
