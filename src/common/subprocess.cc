#include "common/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

extern char** environ;

namespace hpc {

std::string JoinArgs(const std::vector<std::string>& argv) {
  std::string s;
  for (const auto& a : argv) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

namespace {

// Our environment with `extra`'s variables set (replacing ours of the same name).
std::vector<std::string> ChildEnvironment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    std::string kv = *e;
    auto eq = kv.find('=');
    if (eq != std::string::npos && extra.count(kv.substr(0, eq))) continue;
    env.push_back(kv);
  }
  for (const auto& [k, v] : extra) env.push_back(k + "=" + v);
  return env;
}

std::vector<char*> NullTerminated(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Starts argv with the pipes' ends as its stdin, stdout and stderr; default signal dispositions
// and an empty mask, whatever ours are. Returns posix_spawnp's error (0 on success).
int Spawn(const std::vector<std::string>& argv, const RunOptions& opts, int in, int out, int err, pid_t* pid) {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in, 0);
  posix_spawn_file_actions_adddup2(&fa, out, 1);
  posix_spawn_file_actions_adddup2(&fa, err, 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
  std::vector<std::string> env = ChildEnvironment(opts.extra_env);
  std::vector<std::string> args = argv;
  std::vector<char*> envp = NullTerminated(env), argp = NullTerminated(args);
  int rc = posix_spawnp(pid, argp[0], &fa, &attr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  return rc;
}

// Small inputs only (scripts, keys); larger ones would need polling the write side too.
void WriteAll(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n <= 0) break;
    off += static_cast<size_t>(n);
  }
}

// Reads the child's stdout and stderr until both close or the deadline passes (then the child
// is killed); whole lines go to opts.on_line as they come.
void Collect(pid_t pid, int out_fd, int err_fd, const RunOptions& opts, ProcessResult* res) {
  auto deadline = std::chrono::steady_clock::now() + opts.timeout;
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  int open_fds = 2;
  char buf[8192];
  std::string partial[2];
  auto emit_lines = [&](int i, bool at_end) {
    if (!opts.on_line) return;
    size_t nl;
    while ((nl = partial[i].find('\n')) != std::string::npos) {
      opts.on_line(partial[i].substr(0, nl));
      partial[i].erase(0, nl + 1);
    }
    if (at_end && !partial[i].empty()) {
      opts.on_line(partial[i]);
      partial[i].clear();
    }
  };
  while (open_fds > 0) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      res->timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(left.count()));
    if (n < 0 && errno == EINTR) continue;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        (i == 0 ? res->out : res->err).append(buf, static_cast<size_t>(r));
        if (opts.on_line) partial[i].append(buf, static_cast<size_t>(r));
        emit_lines(i, false);
      } else {
        emit_lines(i, true);
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
}

}  // namespace

Result<ProcessResult> RunProcess(const std::vector<std::string>& argv, const RunOptions& opts) {
  int out_pipe[2], err_pipe[2], in_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) || ::pipe2(err_pipe, O_CLOEXEC) || ::pipe2(in_pipe, O_CLOEXEC)) {
    return Status::Errorf("pipe: {}", std::strerror(errno));
  }
  pid_t pid;
  int rc = Spawn(argv, opts, in_pipe[0], out_pipe[1], err_pipe[1], &pid);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  ::close(in_pipe[0]);
  if (rc != 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    ::close(in_pipe[1]);
    return Status::Errorf("cannot run {}: {}", argv[0], std::strerror(rc));
  }
  if (!opts.stdin_data.empty()) WriteAll(in_pipe[1], opts.stdin_data);
  ::close(in_pipe[1]);

  ProcessResult res;
  Collect(pid, out_pipe[0], err_pipe[0], opts, &res);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {}
  if (WIFEXITED(wstatus))
    res.exit_code = WEXITSTATUS(wstatus);
  else if (WIFSIGNALED(wstatus))
    res.exit_code = 128 + WTERMSIG(wstatus);
  return res;
}

Status RunChecked(const std::vector<std::string>& argv, const RunOptions& opts) {
  ASSIGN_OR_RETURN(ProcessResult r, RunProcess(argv, opts));
  if (r.timed_out) return Status::Errorf("`{}` timed out", JoinArgs(argv));
  if (r.exit_code != 0) {
    std::string err = r.err.empty() ? r.out : r.err;
    while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
    return Status::Errorf("`{}` exited {}: {}", JoinArgs(argv), r.exit_code, err);
  }
  return Status::Ok();
}

uint64_t ProcessStartTime(pid_t pid) {
  if (pid <= 0) return 0;
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string s;
  if (!std::getline(in, s)) return 0;
  auto close = s.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(s.substr(close + 2));
  std::string field;
  // Fields after the command name start at 3 (state); starttime is field 22.
  for (int i = 3; i <= 22 && rest >> field; ++i) {
    if (i == 3 && field == "Z") return 0;  // a zombie is gone for our purposes
    if (i == 22) return std::stoull(field);
  }
  return 0;
}

}  // namespace hpc
