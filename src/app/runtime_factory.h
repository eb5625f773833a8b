// The runtime factory: where a machine's daemon and its clients get the local runtime
// (namespaced processes on this machine, src/runtime/local/). The Kubernetes controller
// (src/kubernetes/) makes its Kubernetes runtime itself: it runs over nothing else. Everything
// else sees runtime/pod_runtime.h; a further runtime is a new folder under src/runtime/ and a
// function here.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "operator/cluster_paths.h"
#include "runtime/local/local_runtime.h"
#include "runtime/pod_runtime.h"
#include "slurm/config.h"

namespace hpc::app {

// The daemon's runtime: it starts, restarts and probes the cluster's pods (RuntimeLifecycle),
// adopting those an earlier daemon left running.
Result<std::unique_ptr<runtime::local::LocalRuntime>> OpenSupervisingRuntime(const op::ClusterPaths& p,
                                                                             const std::string& subnet,
                                                                             const std::string& self_exe);

// A client's view of a cluster's pods (the CLI, the agent): it lists, reads and execs, and
// creates or deletes pods that the daemon then supervises.
Result<std::unique_ptr<runtime::PodRuntime>> OpenClientRuntime(const op::ClusterPaths& p, const std::string& self_exe);

// Stops every pod of a cluster whose daemon is gone and releases its network (`down`); also
// what a crashed daemon left behind. Ok when there is no runtime to open.
Status TeardownRuntime(const op::ClusterPaths& p, const std::string& self_exe);

// Removes a stopped cluster's shared root, so that its pods make it again from their image.
Status ResetSharedRoot(const op::ClusterPaths& p);

// Refuses a subnet that another cluster's network already holds, before anything is created.
Status CheckSubnetFree(const op::ClusterPaths& p, const std::string& cluster_name, const std::string& subnet);

// How slurmd confines jobs in local worker pods: with cgroup v1 where this host has it.
// Slurm runs in a v2 hierarchy outside systemd only from 23.02 (IgnoreSystemd); Debian 12 has
// 22.05, so there jobs stay unconfined until the cluster runs a newer Slurm.
slurm::JobCgroups HostJobCgroups();

// The first process of a local pod (`hpcplane __pod-init PLAN`); returns its exit code.
int RunPodInit(const char* plan);

// `hpcplane __pod-exec CGROUP_DIR... -- PROGRAM [ARG...]`: a process that exec starts in a local
// pod, held as the pod's own processes are; returns only on failure.
int RunPodExec(int argc, char** argv);

}  // namespace hpc::app
