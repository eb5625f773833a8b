// Runs a program (no shell) and captures its output, with a deadline.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc {

struct ProcessResult {
  int exit_code = -1;  // 128+signal when killed by a signal
  std::string out;
  std::string err;
  bool timed_out = false;
  bool ok() const { return exit_code == 0 && !timed_out; }
};

struct RunOptions {
  std::chrono::milliseconds timeout{30000};
  std::map<std::string, std::string> extra_env;
  std::string stdin_data;
  // Called with each line of output (stdout or stderr, without its newline) as it arrives,
  // besides capturing it: progress of long commands.
  std::function<void(const std::string& line)> on_line;
};

// Fails only when the program cannot be started; a non-zero exit is in the result.
Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, const RunOptions& opts = {});

// Runs and turns any non-zero exit into an error naming the command and its stderr.
Status RunChecked(const std::vector<std::string>& argv, const RunOptions& opts = {});

std::string JoinArgs(const std::vector<std::string>& argv);

// Start time of a process in clock ticks since boot, or 0 when it does not exist (or is a
// zombie). Together with the PID it identifies one process, so a recycled PID is never mistaken
// for the one recorded.
uint64_t ProcessStartTime(pid_t pid);

}  // namespace hpc
