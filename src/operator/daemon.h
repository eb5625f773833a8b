// Where a cluster's state lives and the helpers the daemon (src/app/daemon.h), the CLI and the
// agent share to find it: the running daemon, the local runtime, the host's accounts.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/result.h"
#include "operator/builders.h"
#include "runtime/local/local_runtime.h"

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

Result<std::unique_ptr<runtime::local::LocalRuntime>> OpenLocalRuntime(const ClusterPaths& p,
                                                                        const std::string& subnet,
                                                                        const std::string& self_exe, bool supervise);

// Host facts the builders need: system accounts and the host's passwd/group files.
Result<BuildInputs> HostBuildInputs();

}  // namespace hpc::op
