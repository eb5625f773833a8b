// The local runtime's parts share this (not part of its interface): a pod's saved state, the
// JSON of its spec, and probes. local_runtime.cc: config maps, secrets, volumes, pods' creation
// and removal; not_enforced.cc: what it cannot enforce of resources; probes.cc: readiness and liveness;
// supervisor.cc: the supervision loop and teardown; exec.cc: commands inside pods.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/subprocess.h"
#include "runtime/local/local_runtime.h"
#include "runtime/pod_spec_json.h"

namespace hpc::runtime::local {

struct LocalRuntime::PodState {
  pid_t pid = 0;
  uint64_t pid_start = 0;
  std::string ip;
  int restarts = 0;
  int consecutive_failures = 0;
  bool ready = false;
  bool stopped = false;  // finished and not to be restarted (policy)
  int last_exit = -1;
  int64_t started_at = 0;
  std::string message;
  // Its init creates the started file (pod_init.h); false for pods an older runtime started,
  // which count as started while alive.
  bool announces_start = false;

  bool Alive() const { return pid > 0 && hpc::ProcessStartTime(pid) == pid_start && pid_start != 0; }
};

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
inline int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// The stored form of a pod's spec (pods/<name>/spec.json).
using runtime::SpecFromJson;
using runtime::SpecJson;
// What this runtime does not enforce of a pod's resources. With `cgroups` (pod_cgroups.h) the
// kernel enforces memory and CPU limits; without, the supervisor enforces the memory limit
// (resident memory checked every second; the pod is killed and restarted) and nothing confines
// CPU time. Devices are never confined, and every pod runs on this one machine, so requests
// reserve nothing either (Slurm's node definitions are what divides the machine).
std::vector<std::string> NotEnforced(const Resources& r, bool cgroups);

// Whether a TCP connection to ip:port is accepted within the timeout.
bool TcpConnects(const std::string& ip, int port, int timeout_ms);
// Whether an HTTP server on ip:port answers a GET of `path` within the timeout: with no path,
// any status line to "/" will do; with one, a 2xx status. A stopped (SIGSTOP) or hung server
// still accepts the connection in the kernel, so a TCP connect alone cannot tell.
bool HttpAnswers(const std::string& ip, int port, int timeout_ms, const std::string& path = "");

}  // namespace hpc::runtime::local
