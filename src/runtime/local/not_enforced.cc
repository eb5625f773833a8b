#include "runtime/local/local_runtime_internal.h"

namespace hpc::runtime::local {

// What this runtime does not enforce of a pod's resources. Memory limits are enforced by the
// supervisor (resident memory checked every second; the pod is killed and restarted); nothing
// here confines CPU time or devices, and every pod runs on this one machine, so requests
// reserve nothing either (Slurm's node definitions are what divides the machine).
std::vector<std::string> NotEnforced(const Resources& r) {
  std::vector<std::string> out;
  if (r.limits.cpus > 0) out.push_back("limits.cpus: not enforced: the local runtime does not confine CPU time");
  if (r.limits.gpus > 0 || r.requests.gpus > 0) {
    out.push_back("gpus: not isolated: the local runtime does not confine devices; Slurm's GRES divides them");
  }
  if (r.requests.cpus > 0 || r.requests.memory_mib > 0) {
    out.push_back("requests: not reserved: every local pod runs on this machine");
  }
  return out;
}

}  // namespace hpc::runtime::local
