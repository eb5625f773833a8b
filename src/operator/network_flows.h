// The connections a Slurm cluster needs, written down once. Every pod of the cluster is isolated
// and accepts only these (the runtime enforces them: nftables on the local runtime,
// NetworkPolicy objects on Kubernetes); replies and what the operator's host opens always pass.
//
//   to           port     from
//   controller   6817     every pod of the cluster (logins, workers, slurmrestd, slurmdbd, ...)
//   slurmdbd     6819     controller, slurmrestd, login, workspace logins, workers (sacct)
//   mariadb      3306     slurmdbd
//   slurmrestd   REST     login, workspace logins, workers
//   workers      any      controller, login, workspace logins, workers (slurmd, srun's steps, MPI)
//   logins       TCP but  controller, workers (slurmctld and slurmstepd call srun back; jobs call
//                tools    back what the user serves there, a Dask scheduler)
//   tools        18880-   none: only the data plane's agent (the host, locally), which proxies
//                18899    them to their owner (api::kToolPortFirst)
//   munge, sackd none     (pods reach them by their Unix socket)
//
// So a tenant (a workspace's login pod, a job on a worker) reaches Slurm's daemons and its own
// job steps, and nothing else: not MariaDB, not another cluster, not the host, not another
// tenant's JupyterLab.
#pragma once

#include <vector>

#include "api/types.h"
#include "runtime/pod_runtime.h"

namespace hpc::op {

std::vector<runtime::NetworkPolicy> BuildNetworkPolicies(const api::SlurmCluster& c);

}  // namespace hpc::op
