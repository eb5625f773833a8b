#include "runtime/pod_runtime.h"

namespace hpc::runtime {
const char* PodPhaseName(PodPhase p) {
  switch (p) {
    case PodPhase::kPending:
      return "Pending";
    case PodPhase::kRunning:
      return "Running";
    case PodPhase::kSucceeded:
      return "Succeeded";
    case PodPhase::kFailed:
      return "Failed";
  }
  return "Unknown";
}
}  // namespace hpc::runtime
