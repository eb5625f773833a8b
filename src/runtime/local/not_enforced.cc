#include "runtime/local/local_runtime_internal.h"

namespace hpc::runtime::local {

// What this runtime does not enforce of a pod's resources. With `cgroups` (pod_cgroups.h) the
// kernel enforces memory and CPU limits; without, the supervisor enforces the memory limit
// (resident memory checked every second; the pod is killed and restarted) and nothing confines
// CPU time. Devices are never confined, and every pod runs on this one machine, so requests
// reserve nothing either (Slurm's node definitions are what divides the machine).
std::vector<std::string> NotEnforced(const Resources& r, bool cgroups) {
  std::vector<std::string> out;
  if (r.limits.cpus > 0 && !cgroups) {
    out.push_back("limits.cpus: not enforced: this host has no cgroup hierarchy the local runtime can use");
  }
  if (r.limits.gpus > 0 || r.requests.gpus > 0) {
    out.push_back("gpus: not isolated: the local runtime does not confine devices; Slurm's GRES divides them");
  }
  if (r.requests.cpus > 0 || r.requests.memory_mib > 0) {
    out.push_back("requests: not reserved: every local pod runs on this machine");
  }
  return out;
}

}  // namespace hpc::runtime::local
