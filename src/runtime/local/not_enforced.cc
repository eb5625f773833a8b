#include "runtime/local/local_runtime_internal.h"

namespace hpc::runtime::local {

// What this runtime does not enforce of a pod's resources. With `cgroups` (pod_cgroups.h) the
// kernel enforces memory and CPU limits; without, the supervisor enforces the memory limit
// (resident memory checked every second; the pod is killed and restarted) and nothing confines
// CPU time. A pod's CPU request is a cpuset of host CPUs (pod_cgroups.h) where the host has
// them; GPUs are the pod's own (gpus.h); every pod runs on this one machine, so memory requests
// reserve nothing (Slurm's node definitions are what divides the machine).
std::vector<std::string> NotEnforced(const Resources& r, bool cgroups) {
  std::vector<std::string> out;
  if (r.limits.cpus > 0 && !cgroups) {
    out.push_back("limits.cpus: not enforced: this host has no cgroup hierarchy the local runtime can use");
  }
  if (r.requests.cpus > 0) {
    out.push_back(cgroups ? "requests.cpus: the pod's own host CPUs (its cpuset) while the host has CPUs to spare; "
                            "shared with other pods beyond that"
                          : "requests.cpus: not reserved: this host has no cgroup hierarchy the local runtime can use");
  }
  if (r.requests.memory_mib > 0) {
    out.push_back("requests.memoryMiB: not reserved: every local pod runs on this machine");
  }
  return out;
}

}  // namespace hpc::runtime::local
