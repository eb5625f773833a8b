// A thread pool that grows with its work: what serves the REST server's connections (a slow
// client holds one thread, never the others') and the agent's relayed requests.
#pragma once

#include <httplib.h>

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace hpc {

// An httplib task queue that starts a thread per waiting connection up to `max_threads`, and
// lets threads idle for a while go.
class ElasticThreadPool : public httplib::TaskQueue {
 public:
  explicit ElasticThreadPool(size_t max_threads);
  ~ElasticThreadPool() override;
  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  void Work();
  const size_t max_threads_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  size_t idle_ = 0;
  size_t running_ = 0;  // threads alive
  bool stopping_ = false;
};

}  // namespace hpc
