#include "runtime/local/local_runtime_internal.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <deque>
#include <fstream>

#include <fmt/format.h>

#include "common/files.h"

namespace hpc::runtime::local {

using nlohmann::json;

Result<std::vector<std::string>> LocalRuntime::ExecArgv(const std::string& pod, const ExecOptions& opts) {
  auto loaded = LoadState(pod);
  if (!loaded.ok()) return Status::Errorf("pod {} not found", pod);
  const PodState& st = *loaded;
  if (!st.Alive()) return Status::Errorf("pod {} is not running", pod);
  if (!Started(pod, st)) return Status::Errorf("pod {} is starting: its init has not built it yet", pod);
  if (opts.argv.empty()) return Status::Error("exec: no command given");
  // What runs in the pod by exec is held as its own processes are: in its cgroups, without user
  // namespaces (pod_exec.h).
  std::vector<std::string> argv = {opts_.self_exe, "__pod-exec"};
  for (const auto& dir : cgroups_.Dirs(pod)) {
    if (files::Exists(dir.host_dir)) argv.push_back(dir.host_dir);  // a pod started before cgroups has none
  }
  argv.insert(argv.end(), {"--", "nsenter", "--target", std::to_string(st.pid), "--net", "--uts", "--mount", "--pid",
                           "--root", "--wd=/", "--"});
  if (opts.user != "root") {
    // Every user has a private group named after it (see slurm-users).
    argv.insert(argv.end(), {"setpriv", "--reuid=" + opts.user, "--regid=" + opts.user, "--init-groups", "--"});
  }
  // The working directory is entered by env, inside the pod: nsenter would resolve a path
  // before joining the pod's mounts and land in the host's directory under a mount point.
  argv.insert(argv.end(), {"env", "-i", "--chdir=" + (opts.working_dir.empty() ? std::string("/") : opts.working_dir),
                           "PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "USER=" + opts.user,
                           "LOGNAME=" + opts.user, "HOSTNAME=" + pod});
  bool has_home = opts.env.count("HOME") > 0;
  if (!has_home) argv.push_back(opts.user == "root" ? "HOME=/root" : "HOME=/tmp");
  for (const auto& [k, v] : opts.env) argv.push_back(k + "=" + v);
  argv.insert(argv.end(), opts.argv.begin(), opts.argv.end());
  return argv;
}

Result<ProcessResult> LocalRuntime::Exec(const std::string& pod, const ExecOptions& opts) {
  ASSIGN_OR_RETURN(auto argv, ExecArgv(pod, opts));
  RunOptions ro;
  ro.timeout = opts.timeout;
  ro.stdin_data = opts.stdin_data;
  return RunProcess(argv, ro);
}

Result<int> LocalRuntime::ExecInteractive(const std::string& pod, const ExecOptions& opts) {
  ASSIGN_OR_RETURN(auto argv, ExecArgv(pod, opts));
  pid_t pid = ::fork();
  if (pid < 0) return Status::Errorf("fork: {}", std::strerror(errno));
  if (pid == 0) {
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    ::execvp(args[0], args.data());
    _exit(127);
  }
  // The terminal's signals reach the child directly; we only wait.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

Result<std::string> LocalRuntime::Logs(const std::string& pod, size_t tail_lines) {
  std::string path = PodDir(pod) + "/log";
  if (!files::Exists(PodDir(pod))) return Status::Errorf("pod {} not found", pod);
  if (!files::Exists(path)) return std::string();
  ASSIGN_OR_RETURN(std::string text, files::Read(path));
  if (tail_lines == 0) return text;
  std::deque<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    lines.push_back(line);
    if (lines.size() > tail_lines) lines.pop_front();
  }
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace hpc::runtime::local
