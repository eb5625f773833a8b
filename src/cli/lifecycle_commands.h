// Verbs that bring up, change and tear down a cluster: up (start the daemon, wait for Ready),
// down, apply, delete and scale.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cli/support.h"

namespace hpc::cli {

int CmdUp(const Globals& g, const std::string& file, bool detach, int timeout_s, const std::string& control_plane,
          const std::string& metrics_listen);
int CmdDown(const Globals& g, bool purge);
int CmdApply(const Globals& g, const std::string& file);
// Moves a cluster to another environment (so another Slurm release): refused, changing
// nothing, where Slurm cannot upgrade; otherwise the cluster restarts on the new images.
struct UpgradeArgs {
  std::string environment;
  int timeout_s = 120;         // for slurmctld to run the new release (a restart: for Ready)
  std::string drain_deadline;  // spec.upgrade.drainDeadline; empty: as it is
  std::string after_deadline;  // spec.upgrade.afterDeadline (wait, requeue, cancel); empty: as it is
  bool restart = false;        // restart every pod at once instead of rolling (jobs on workers end)
};
int CmdUpgrade(const Globals& g, const UpgradeArgs& args);
int CmdDelete(const Globals& g, const std::string& kind, const std::string& name);
int CmdScale(const Globals& g, const std::string& kind, const std::string& name, std::optional<int> replicas, bool wait,
             int timeout_s);

}  // namespace hpc::cli
