// What the integration tests and the benchmarks share to drive real programs: a background
// process with its output in a file, a free loopback port, polling with a deadline, and the
// string helpers for reading command output.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace hpc::testkit {

// A process started in the background (e.g. `hpcplane server`), its output in a file; ended
// with SIGTERM (then SIGKILL) when destroyed, or at once with Kill9().
class Background {
 public:
  Background(const std::vector<std::string>& argv, const std::string& log_path);
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  pid_t pid() const { return pid_; }
  void Kill9();
  void Stop();
  std::string Log() const;

 private:
  pid_t pid_ = -1;
  std::string log_;
};

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();

// Polls `pred` until it holds or the deadline passes: first after 50 ms, then at twice the
// interval each time up to kMaxWaitInterval (what a wait for seconds costs is a few polls, not
// one every 100 ms), and once more at the deadline.
inline constexpr std::chrono::milliseconds kMaxWaitInterval{500};
bool WaitFor(const std::function<bool()>& pred, std::chrono::milliseconds timeout);

std::vector<std::string> SplitLines(const std::string& s);
std::string Trim(const std::string& s);

}  // namespace hpc::testkit
