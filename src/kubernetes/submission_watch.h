// The Kubernetes operator's change probe: it learns of a submission the moment slurmctld's
// job_submit hook rewrites its marker file (slurm/config.h, kSubmitMarkerFile), as the local
// daemon does with inotify, instead of at the cluster's next resync (every 2 s: a cold start
// waited 1 s for it on average). A controller pod's files cannot be watched from outside, so the
// watch is a long poll: a small program run in the controller pod by `pods/exec` reads the
// marker every 100 ms and ends when it changed, or after 25 s unchanged; the next one starts at
// once. An idle cluster costs 2-3 execs a minute and no other request.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/subprocess.h"
#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/objects.h"

namespace hpc::kube {

class SubmissionWatch {
 public:
  struct Options {
    std::chrono::seconds poll_for{25};    // how long one exec waits for a change
    std::chrono::seconds retry_after{5};  // after an exec that failed (the pod not running yet)
  };
  // Runs `argv` in the controller pod and returns what it printed.
  using Exec =
      std::function<Result<ProcessResult>(const std::vector<std::string>& argv, std::chrono::milliseconds timeout)>;

  // Starts watching. The watch's thread owns `exec` and may outlive this object by one exec
  // (which cannot be interrupted); `on_submission` runs on that thread for each change seen
  // after the first read, and never once Stop() returned.
  // `name` (the cluster's) is for the log.
  SubmissionWatch(std::string name, Exec exec, std::function<void()> on_submission, Options options);
  SubmissionWatch(std::string name, Exec exec, std::function<void()> on_submission)
      : SubmissionWatch(std::move(name), std::move(exec), std::move(on_submission), Options{}) {}
  ~SubmissionWatch() { Stop(); }
  SubmissionWatch(const SubmissionWatch&) = delete;
  SubmissionWatch& operator=(const SubmissionWatch&) = delete;

  // Ends the watch without waiting for an exec in flight: its answer is dropped.
  void Stop();

  // The program run in the pod, given the marker's last content ("-" for none yet: it then
  // answers at once).
  static std::vector<std::string> PollCommand(const std::string& last, std::chrono::seconds poll_for);

  // pods/exec into cluster `ctx`'s controller pod `pod` (its container "controller", which runs
  // as root), as the slurm user, on `api` alone: no read of the pod first, so the watch costs no
  // request but its execs, and holds nothing of the operator's.
  static Exec InControllerPod(std::shared_ptr<runtime::kubernetes::ApiClient> api,
                              const runtime::kubernetes::ObjectContext& ctx, const std::string& pod);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

}  // namespace hpc::kube
