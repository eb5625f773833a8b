#include "common/pty.h"

#include <fcntl.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace hpc {

Result<PtyProcess> SpawnOnPty(const std::vector<std::string>& argv, int cols, int rows) {
  if (argv.empty()) return Status::InvalidArgument("", "no command to run on the terminal");
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  struct winsize size {};
  size.ws_col = static_cast<unsigned short>(cols);
  size.ws_row = static_cast<unsigned short>(rows);
  int fd = -1;
  const pid_t pid = ::forkpty(&fd, nullptr, nullptr, &size);
  if (pid < 0) return Status::Errorf("forkpty: {}", std::strerror(errno));
  if (pid == 0) {
    // A terminal's programs start as a login's do: no signal blocked or ignored, whatever the
    // thread that started them had (a Ctrl-C must reach them).
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig : {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGPIPE, SIGTSTP, SIGTTIN, SIGTTOU, SIGCHLD}) {
      ::signal(sig, SIG_DFL);
    }
    ::execvp(args[0], args.data());
    _exit(127);
  }
  ::fcntl(fd, F_SETFD, FD_CLOEXEC);
  return PtyProcess{fd, pid};
}

Status ResizePty(int fd, int cols, int rows) {
  struct winsize size {};
  size.ws_col = static_cast<unsigned short>(cols);
  size.ws_row = static_cast<unsigned short>(rows);
  if (::ioctl(fd, TIOCSWINSZ, &size) != 0) return Status::Errorf("resize the terminal: {}", std::strerror(errno));
  return Status::Ok();
}

std::string ExitReason(int wait_status) {
  if (WIFEXITED(wait_status)) return fmt::format("exited {}", WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) return fmt::format("killed by signal {}", WTERMSIG(wait_status));
  return "ended";
}

}  // namespace hpc
