// What every CLI command shares: global flags, error printing, finding the cluster.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "api/codec.h"
#include "common/result.h"
#include "operator/cluster_paths.h"
#include "runtime/pod_runtime.h"

namespace hpc::cli {

using Clock = std::chrono::steady_clock;

struct Globals {
  std::string state_dir = "/var/lib/hpcplane";
  std::string cluster;
  bool verbose = false;
  std::string self_exe;
};

// Prints "error: MESSAGE" and returns the exit code 1.
// Exit codes, so a script can tell "fix the input" from "retry later" without reading the
// message (sysexits.h values where one fits). CLI11's own usage errors keep CLI11's codes.
inline constexpr int kExitFailed = 1;         // the request was wrong or refused: input, not found, conflict
inline constexpr int kExitInternal = 70;      // EX_SOFTWARE: a bug or broken state in hpcplane
inline constexpr int kExitUnavailable = 75;   // EX_TEMPFAIL: a dependency did not answer; retrying may help
inline constexpr int kExitNoPermission = 77;  // EX_NOPERM: no or wrong credentials, or not allowed
int ExitCodeFor(StatusCode code);

// Prints "error: <message>" on stderr; returns the exit code for the status's code.
int Fail(const Status& s);
double Seconds(Clock::time_point since);
// Names of the clusters whose specs the state dir holds, running or not.
std::vector<std::string> ListStoredClusters(const std::string& state_dir);
// The cluster a command is about: --cluster, else the only one in the state dir.
Result<op::ClusterPaths> ResolveCluster(const Globals& g);
// A runtime handle for commands (no supervision: the daemon owns that).
Result<std::unique_ptr<runtime::PodRuntime>> ClientRuntime(const Globals& g, const op::ClusterPaths& p);

// Decodes a manifest (the embedded example when `file` is empty) and checks it as a whole: one
// SlurmCluster at most, each NodeSet belongs to it (or to `stored` when the file has none).
Result<api::Manifest> LoadManifest(const std::string& file, const std::optional<api::SlurmCluster>& stored);

}  // namespace hpc::cli
