// `pods/exec` over WebSocket, as kubectl exec speaks it: the channel protocol
// v5.channel.k8s.io (stdin 0, stdout 1, stderr 2, status 3; 255 closes a channel), falling back
// to v4.channel.k8s.io for a command without input. The command's exit code comes from the
// status channel: Success is 0, NonZeroExitCode carries the code.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
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
  bool stdin = false;      // attached input (ExecAttached)
  bool tty = false;        // a terminal in the container: stderr is its stdout
  std::chrono::milliseconds timeout{60000};
  // When set and true, ExecInPod gives up within 100 ms: its caller is stopping.
  std::shared_ptr<const std::atomic<bool>> cancelled;
};

// The exec URL's path and query for `request`.
std::string PodExecPath(const PodExecRequest& request);

// Runs the command and collects its output; `timed_out` when it did not end in time (its output
// so far is kept); Unavailable ("cancelled") once `request.cancelled` is true. An error when the API refused the exec
// (the pod is gone, not running, the container does not exist) or the command could not be started in the container.
Result<ProcessResult> ExecInPod(const ApiClient& api, const PodExecRequest& request);

// Runs the command attached: what is read from `in_fd` goes to its stdin (closed at the input's
// end where the protocol allows), what it writes to `out_fd`, until it ends; returns its exit
// code. With `request.tty` it has a terminal in the container whose size follows `in_fd`'s (at
// the start and on each SIGWINCH, which the caller must not block), and `in_fd`, when a
// terminal, is raw for the session so that Ctrl-C and Ctrl-D reach the container's terminal as
// bytes. What `hpcplane kube-attach` runs: the agent's terminals and JupyterLab on Kubernetes.
Result<int> ExecAttached(const ApiClient& api, PodExecRequest request, int in_fd, int out_fd);

// What the status channel's message says: the exit code, or why the exec failed.
Result<int> ExitCodeFromExecStatus(const std::string& status_json);

}  // namespace hpc::runtime::kubernetes
