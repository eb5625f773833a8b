// How `hpcplane agent` reaches a SlurmCluster on Kubernetes (app/kubernetes_data_plane.h), apart
// from the data plane itself so that its callers need not see the Kubernetes runtime.
#pragma once

#include <string>

namespace hpc::app {

struct KubernetesDataPlaneOptions {
  std::string kubeconfig;  // empty: the pod's ServiceAccount (in the cluster)
  std::string namespace_name;
  std::string cluster;    // the SlurmCluster's name
  std::string state_dir;  // the agent's own files: its catalog (tiers, dataset groups), its job window
  std::string self_exe;   // this binary, for `kube-attach`
};

}  // namespace hpc::app
