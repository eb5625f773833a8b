// What every CLI command shares: global flags, error printing, finding the cluster.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "operator/daemon.h"
#include "runtime/local/local_runtime.h"

namespace hpc::cli {

using Clock = std::chrono::steady_clock;

struct Globals {
  std::string state_dir = "/var/lib/hpcplane";
  std::string cluster;
  bool verbose = false;
  std::string self_exe;
};

// Prints "error: MESSAGE" and returns the exit code 1.
int Fail(const Status& s);
double Seconds(Clock::time_point since);
// Names of the clusters whose specs the state dir holds, running or not.
std::vector<std::string> ListStoredClusters(const std::string& state_dir);
// The cluster a command is about: --cluster, else the only one in the state dir.
Result<op::ClusterPaths> ResolveCluster(const Globals& g);
// A runtime handle for commands (no supervision: the daemon owns that).
Result<std::unique_ptr<runtime::local::LocalRuntime>> ClientRuntime(const Globals& g, const op::ClusterPaths& p);

}  // namespace hpc::cli
