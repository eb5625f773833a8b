#include "kubernetes/work_queue.h"

#include <algorithm>

namespace hpc::kube {

WorkQueue::WorkQueue(Options options, std::function<Clock::time_point()> now) : o_(options), now_(std::move(now)) {}

void WorkQueue::AddAtLocked(const std::string& key, Clock::time_point due) {
  if (shut_down_) return;
  if (auto last = last_start_.find(key); last != last_start_.end()) due = std::max(due, last->second + o_.min_gap);
  auto& slot = held_.count(key) ? held_again_ : waiting_;
  auto it = slot.find(key);
  if (it == slot.end()) {
    slot.emplace(key, due);
  } else {
    it->second = std::min(it->second, due);
  }
  cv_.notify_one();
}

void WorkQueue::Add(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  AddAtLocked(key, now_());
}

void WorkQueue::AddAfter(const std::string& key, std::chrono::milliseconds delay) {
  std::lock_guard<std::mutex> lock(mu_);
  AddAtLocked(key, now_() + delay);
}

void WorkQueue::AddRateLimited(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  const int failures = failures_[key]++;
  auto backoff = o_.failure_base;
  for (int i = 0; i < failures && backoff < o_.failure_max; ++i) backoff *= 2;
  AddAtLocked(key, now_() + std::min(backoff, o_.failure_max));
}

void WorkQueue::Forget(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  failures_.erase(key);
}

int WorkQueue::Failures(const std::string& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = failures_.find(key);
  return it == failures_.end() ? 0 : it->second;
}

std::optional<std::string> WorkQueue::TakeDueLocked(Clock::time_point now) {
  auto best = waiting_.end();
  for (auto it = waiting_.begin(); it != waiting_.end(); ++it) {
    if (it->second <= now && (best == waiting_.end() || it->second < best->second)) best = it;
  }
  if (best == waiting_.end()) return std::nullopt;
  std::string key = best->first;
  waiting_.erase(best);
  held_.insert(key);
  last_start_[key] = now;
  return key;
}

std::optional<std::string> WorkQueue::TryGet() {
  std::lock_guard<std::mutex> lock(mu_);
  if (shut_down_) return std::nullopt;
  return TakeDueLocked(now_());
}

std::optional<std::string> WorkQueue::Get() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!shut_down_) {
    if (auto key = TakeDueLocked(now_())) return key;
    if (auto next = NextDueLocked()) {
      cv_.wait_until(lock, *next);  // or sooner, when a key is added
    } else {
      cv_.wait(lock);
    }
  }
  return std::nullopt;
}

void WorkQueue::Done(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  held_.erase(key);
  auto again = held_again_.find(key);
  if (again == held_again_.end()) return;
  const Clock::time_point due = again->second;
  held_again_.erase(again);
  AddAtLocked(key, due);
}

void WorkQueue::ShutDown() {
  std::lock_guard<std::mutex> lock(mu_);
  shut_down_ = true;
  cv_.notify_all();
}

size_t WorkQueue::Waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_.size();
}

std::optional<WorkQueue::Clock::time_point> WorkQueue::NextDue() const {
  std::lock_guard<std::mutex> lock(mu_);
  return NextDueLocked();
}

std::optional<WorkQueue::Clock::time_point> WorkQueue::NextDueLocked() const {
  std::optional<Clock::time_point> next;
  for (const auto& [key, due] : waiting_) next = next ? std::min(*next, due) : due;
  return next;
}

}  // namespace hpc::kube
