// Where a cluster's state lives in a state dir (ClusterPaths), and the helpers the daemon
// (src/app/daemon.h), the CLI and the agent share to find it: the running daemon's PID and the
// host's accounts. Which runtime hosts the cluster's pods is the wiring layer's choice
// (src/app/runtime_factory.h).
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/result.h"
#include "operator/builders.h"

namespace hpc::op {

struct ClusterPaths {
  std::string state_dir;
  std::string name;
  std::string Dir() const { return state_dir + "/clusters/" + name; }
  std::string RuntimeDir() const { return Dir() + "/runtime"; }
  std::string PidFile() const { return Dir() + "/daemon.pid"; }
  std::string LogFile() const { return Dir() + "/daemon.log"; }
  // Material for network names: unique per state dir and cluster.
  std::string NetworkKey() const { return state_dir + "/" + name; }
};

// The running daemon's PID, verified by its start time; 0 when none runs.
pid_t RunningDaemon(const ClusterPaths& p);

// Host facts the builders need: system accounts and the host's passwd/group files.
Result<BuildInputs> HostBuildInputs();

}  // namespace hpc::op
