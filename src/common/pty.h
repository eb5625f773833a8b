// A process on a new pseudo-terminal: what a terminal in the browser runs its shell on.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace hpc {

struct PtyProcess {
  int fd = -1;    // the pseudo-terminal's controller side: read what the process writes, write its input
  pid_t pid = 0;  // a session leader: signal -pid to reach every process of it
};

// Runs argv (PATH is searched) on a new pseudo-terminal of `cols` x `rows`, in its own session
// with the terminal as its controlling one. The caller owns the fd (close-on-exec) and reaps pid.
Result<PtyProcess> SpawnOnPty(const std::vector<std::string>& argv, int cols, int rows);
// Sets the terminal's size; the process gets SIGWINCH.
Status ResizePty(int fd, int cols, int rows);
// "exited 0", "killed by signal 9": how a waitpid status reads.
std::string ExitReason(int wait_status);

}  // namespace hpc
