#include "common/elastic_thread_pool.h"

#include <algorithm>
#include <chrono>

namespace hpc {
namespace {

constexpr size_t kMinThreads = 8;
constexpr auto kIdleThreadLifetime = std::chrono::seconds(30);

}  // namespace

ElasticThreadPool::ElasticThreadPool(size_t max_threads) : max_threads_(std::max(max_threads, kMinThreads)) {}

ElasticThreadPool::~ElasticThreadPool() { shutdown(); }

void ElasticThreadPool::enqueue(std::function<void()> fn) {
  std::lock_guard<std::mutex> l(mu_);
  jobs_.push_back(std::move(fn));
  if (idle_ < jobs_.size() && running_ < max_threads_) {
    ++running_;
    std::thread([this] { Work(); }).detach();
  } else {
    cv_.notify_one();
  }
}

void ElasticThreadPool::Work() {
  std::unique_lock<std::mutex> l(mu_);
  while (true) {
    ++idle_;
    bool woke = cv_.wait_for(l, kIdleThreadLifetime, [&] { return stopping_ || !jobs_.empty(); });
    --idle_;
    if (!jobs_.empty()) {
      auto job = std::move(jobs_.front());
      jobs_.pop_front();
      l.unlock();
      job();
      l.lock();
      continue;
    }
    if (stopping_ || (!woke && running_ > kMinThreads)) break;
  }
  --running_;
  cv_.notify_all();
}

void ElasticThreadPool::shutdown() {
  std::unique_lock<std::mutex> l(mu_);
  stopping_ = true;
  cv_.notify_all();
  cv_.wait(l, [&] { return running_ == 0; });
}

}  // namespace hpc
