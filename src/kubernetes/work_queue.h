// The operator's work queue, as client-go's rate-limited workqueue: it holds keys (a
// SlurmCluster's "namespace/name"), each waiting at most once however often it is added, and
// never hands one key to two workers at once (a key added while it is worked on waits until
// Done). Each key is rate limited on its own: passes of one key start at least `min_gap`
// apart, so a burst of watch events (the operator's own writes among them) costs one pass, and
// a key whose passes keep failing waits twice as long each time (`failure_base` doubling up to
// `failure_max`) until Forget; other keys are not held up by it.
//
// Time comes from the clock given (tests pass a fake one and use TryGet); Get blocks.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>

namespace hpc::kube {

class WorkQueue {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::chrono::milliseconds min_gap{100};
    std::chrono::milliseconds failure_base{200};
    std::chrono::milliseconds failure_max{30000};
  };
  explicit WorkQueue(Options options, std::function<Clock::time_point()> now = Clock::now);

  // Due now, or once `min_gap` has passed since the key's last pass started.
  void Add(const std::string& key);
  // Due after `delay` (a resync, a duty falling due); an earlier due time already set stays.
  void AddAfter(const std::string& key, std::chrono::milliseconds delay);
  // After a pass that failed: due after the key's backoff, which doubles with each call.
  void AddRateLimited(const std::string& key);
  // A pass succeeded: the key's backoff starts again from `failure_base`.
  void Forget(const std::string& key);
  int Failures(const std::string& key) const;

  // The key due earliest at `now` that no worker holds, now held by the caller until Done.
  std::optional<std::string> TryGet();
  // Blocks until a key is due (then as TryGet), or returns nullopt once ShutDown was called.
  std::optional<std::string> Get();
  void Done(const std::string& key);
  void ShutDown();

  // Keys waiting (held ones not counted), and when the earliest of them is due.
  size_t Waiting() const;
  std::optional<Clock::time_point> NextDue() const;

 private:
  void AddAtLocked(const std::string& key, Clock::time_point due);
  std::optional<std::string> TakeDueLocked(Clock::time_point now);
  std::optional<Clock::time_point> NextDueLocked() const;

  const Options o_;
  const std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool shut_down_ = false;
  std::map<std::string, Clock::time_point> waiting_;     // key -> when it is due
  std::set<std::string> held_;                           // handed out, not yet Done
  std::map<std::string, Clock::time_point> held_again_;  // added while held: due after Done
  std::map<std::string, Clock::time_point> last_start_;
  std::map<std::string, int> failures_;
};

}  // namespace hpc::kube
