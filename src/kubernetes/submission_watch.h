// The Kubernetes operator's change probe: it learns of a submission the moment slurmctld's
// job_submit hook rewrites its marker file (slurm/config.h, kSubmitMarkerFile), as the local
// daemon does with inotify, instead of at the cluster's next resync (every 2 s: a cold start
// waited 1 s for it on average). A controller pod's files cannot be watched from outside, so the
// watch is a long poll: a small program run in the controller pod by `pods/exec` reads the
// marker every 100 ms and ends when it changed, or after 25 s unchanged; the next one starts at
// once. An idle cluster costs 2-3 execs a minute and no other request. The leading operator
// watches each cluster it reconciles; a replica that stops leading stops its watches.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/result.h"
#include "common/subprocess.h"
#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/objects.h"

namespace hpc::kube {

class SubmissionWatch {
 public:
  struct Options {
    std::chrono::milliseconds poll_for{25000};    // how long one exec waits for a change
    std::chrono::milliseconds retry_after{5000};  // after an exec that failed (the pod not running yet)
    std::chrono::milliseconds min_gap{250};       // after a change: a burst of submissions is a few execs
  };
  // Runs `argv` in the controller pod and returns what it printed; gives up soon once
  // `cancelled` is true.
  using Exec =
      std::function<Result<ProcessResult>(const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                          std::shared_ptr<const std::atomic<bool>> cancelled)>;

  // Starts watching; `name` (the cluster's) is for the log. `on_submission` runs on the watch's
  // thread for each change seen after the first read.
  SubmissionWatch(std::string name, Exec exec, std::function<void()> on_submission, Options options);
  SubmissionWatch(std::string name, Exec exec, std::function<void()> on_submission)
      : SubmissionWatch(std::move(name), std::move(exec), std::move(on_submission), Options{}) {}
  // Stops: cancels the exec in flight and waits for the thread (a tenth of a second).
  ~SubmissionWatch();
  SubmissionWatch(const SubmissionWatch&) = delete;
  SubmissionWatch& operator=(const SubmissionWatch&) = delete;

  // The program run in the pod, given the marker's last content ("-" for none yet: it then
  // answers at once).
  static std::vector<std::string> PollCommand(const std::string& last, std::chrono::milliseconds poll_for);

  // pods/exec into cluster `ctx`'s controller pod `pod` (its container "controller", which runs
  // as root), as the slurm user, on `api` alone: no read of the pod first, so the watch costs no
  // request but its execs.
  static Exec InControllerPod(std::shared_ptr<runtime::kubernetes::ApiClient> api,
                              const runtime::kubernetes::ObjectContext& ctx, const std::string& pod);

 private:
  void Run(std::string name, Exec exec, Options options);

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
  std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
  std::function<void()> on_submission_;
  std::thread thread_;  // last: started once the rest is
};

}  // namespace hpc::kube
