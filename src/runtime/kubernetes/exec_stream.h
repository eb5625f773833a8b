// `pods/exec` over WebSocket, as kubectl exec speaks it: the channel protocol
// v5.channel.k8s.io (stdin 0, stdout 1, stderr 2, status 3; 255 closes a channel), falling back
// to v4.channel.k8s.io for a command without input. The command's exit code comes from the
// status channel: Success is 0, NonZeroExitCode carries the code.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/subprocess.h"
#include "runtime/kubernetes/api_client.h"

namespace hpc::runtime::kubernetes {

struct PodExecRequest {
  std::string namespace_name;
  std::string pod;
  std::string container;
  std::vector<std::string> argv;
  std::string stdin_data;  // sent whole, then stdin is closed (v5 only)
  std::chrono::milliseconds timeout{60000};
};

// The exec URL's path and query for `request`.
std::string PodExecPath(const PodExecRequest& request);

// Runs the command and collects its output; `timed_out` when it did not end in time (its output
// so far is kept). An error when the API refused the exec (the pod is gone, not running, the
// container does not exist) or the command could not be started in the container.
Result<ProcessResult> ExecInPod(const ApiClient& api, const PodExecRequest& request);

// What the status channel's message says: the exit code, or why the exec failed.
Result<int> ExitCodeFromExecStatus(const std::string& status_json);

}  // namespace hpc::runtime::kubernetes
