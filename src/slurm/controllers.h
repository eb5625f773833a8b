// Which slurmctld serves when a cluster has a backup controller, as Slurm itself tells it: the
// heartbeat file the controller in control rewrites in StateSaveLocation (every quarter of
// SlurmctldTimeout, at most 30 s apart), which a backup reads before it takes over. Its format
// (Slurm 18.08 on): the time as a big-endian uint64, then the serving controller's index in
// SlurmctldHost's order (0 the primary, 1 the backup) as another.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace hpc::slurm {

// The heartbeat's path in a controller pod (StateSaveLocation).
std::string HeartbeatPath();
// The command that prints the heartbeat file as hex bytes (od, in every image).
std::vector<std::string> ReadHeartbeatCommand();

struct Heartbeat {
  int64_t written_at = 0;  // unix seconds, by the serving controller's clock
  int64_t controller = 0;  // its index in SlurmctldHost's order
};
// ReadHeartbeatCommand's output, or nullopt when it is not 16 bytes of hex.
std::optional<Heartbeat> ParseHeartbeat(const std::string& od_output);

// Whether a heartbeat written at `written_at` still shows its controller serving at `now`: a
// backup takes over only once it is older than SlurmctldTimeout; twice that, and no controller
// serves (the one that beat is gone, and none took over yet).
inline bool HeartbeatCurrent(const Heartbeat& beat, int64_t now, int slurmctld_timeout_seconds) {
  return now - beat.written_at <= 2 * static_cast<int64_t>(slurmctld_timeout_seconds);
}

// The pod Slurm's commands run in: the controller pod whose slurmctld serves, so that they reach
// Slurm when the other one's machine is gone (its pod with it). Set by the cluster reconciler
// each pass; read by every component that runs commands, from any thread.
class CommandPod {
 public:
  explicit CommandPod(std::string pod) : pod_(std::move(pod)) {}
  std::string Get() const {
    std::lock_guard<std::mutex> lock(mu_);
    return pod_;
  }
  void Set(std::string pod) {
    std::lock_guard<std::mutex> lock(mu_);
    pod_ = std::move(pod);
  }

 private:
  mutable std::mutex mu_;
  std::string pod_;
};

}  // namespace hpc::slurm
