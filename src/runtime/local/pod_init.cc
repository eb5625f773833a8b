#include "runtime/local/pod_init.h"

#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/files.h"

namespace hpc::runtime::local {

nlohmann::json ToJson(const LaunchPlan& p) {
  nlohmann::json mounts = nlohmann::json::array();
  for (const auto& m : p.mounts) {
    mounts.push_back({{"source", m.source}, {"target", m.target}, {"readOnly", m.read_only}});
  }
  return {{"hostname", p.hostname}, {"netns", p.netns_path}, {"mounts", mounts},
          {"command", p.command},   {"env", p.env},          {"uid", p.uid},
          {"gid", p.gid},           {"workingDir", p.working_dir}};
}

Result<LaunchPlan> LaunchPlanFromJson(const nlohmann::json& j) {
  try {
    LaunchPlan p;
    p.hostname = j.at("hostname").get<std::string>();
    p.netns_path = j.at("netns").get<std::string>();
    for (const auto& m : j.at("mounts")) {
      p.mounts.push_back({m.at("source").get<std::string>(), m.at("target").get<std::string>(),
                          m.at("readOnly").get<bool>()});
    }
    p.command = j.at("command").get<std::vector<std::string>>();
    p.env = j.at("env").get<std::vector<std::string>>();
    p.uid = j.at("uid").get<int64_t>();
    p.gid = j.at("gid").get<int64_t>();
    p.working_dir = j.at("workingDir").get<std::string>();
    return p;
  } catch (const nlohmann::json::exception& e) {
    return Status::Errorf("launch plan: {}", e.what());
  }
}

namespace {

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "pod-init: %s: %s\n", what.c_str(), std::strerror(errno));
  std::fflush(stderr);
  _exit(127);
}

void MountOrDie(const char* src, const char* target, const char* type, unsigned long flags,
                const char* data = nullptr) {
  if (::mount(src, target, type, flags, data) != 0) Die(std::string("mount ") + target);
}

// Creates a mount point of the same kind (file or directory) as the source.
void EnsureMountPoint(const std::string& target, bool is_dir) {
  std::error_code ec;
  if (std::filesystem::exists(target, ec)) return;
  std::filesystem::create_directories(is_dir ? target : std::filesystem::path(target).parent_path().string(), ec);
  if (!is_dir) {
    int fd = ::open(target.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) ::close(fd);
  }
}

pid_t g_child = -1;
void Forward(int sig) {
  if (g_child > 0) ::kill(g_child, sig);
}

}  // namespace

int RunPodInit(const std::string& plan_path) {
  auto text = files::Read(plan_path);
  if (!text.ok()) Die(text.status().message());
  auto j = nlohmann::json::parse(*text, nullptr, false);
  auto plan_or = LaunchPlanFromJson(j);
  if (!plan_or.ok()) {
    std::fprintf(stderr, "pod-init: %s\n", plan_or.status().message().c_str());
    return 127;
  }
  LaunchPlan plan = std::move(plan_or).value();

  // Mount changes stay inside this pod.
  MountOrDie(nullptr, "/", nullptr, MS_REC | MS_PRIVATE);
  int netfd = ::open(plan.netns_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (netfd < 0 || ::setns(netfd, CLONE_NEWNET) != 0) Die("join network namespace " + plan.netns_path);
  ::close(netfd);
  if (::sethostname(plan.hostname.data(), plan.hostname.size()) != 0) Die("sethostname");

  // Sources are opened before /run and /tmp are replaced, since they may live beneath them;
  // the binds then go through /proc/self/fd.
  std::vector<std::pair<int, LaunchMount>> sources;
  for (const auto& m : plan.mounts) {
    int fd = ::open(m.source.c_str(), O_PATH | O_CLOEXEC);
    if (fd < 0) Die("open mount source " + m.source);
    sources.emplace_back(fd, m);
  }
  MountOrDie("tmpfs", "/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=755");
  MountOrDie("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
  // Parents before children, so nested mount paths land on top of their parents.
  std::sort(sources.begin(), sources.end(), [](const auto& a, const auto& b) {
    return std::count(a.second.target.begin(), a.second.target.end(), '/') <
           std::count(b.second.target.begin(), b.second.target.end(), '/');
  });
  for (const auto& [fd, m] : sources) {
    struct stat st;
    if (::fstat(fd, &st) != 0) Die("stat " + m.source);
    EnsureMountPoint(m.target, S_ISDIR(st.st_mode));
    std::string via = "/proc/self/fd/" + std::to_string(fd);
    MountOrDie(via.c_str(), m.target.c_str(), nullptr, MS_BIND | MS_REC);
    if (m.read_only) {
      MountOrDie(nullptr, m.target.c_str(), nullptr, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC);
    }
    ::close(fd);
  }
  // A /proc of this pod's PID namespace: `ps` inside shows the pod's processes only.
  MountOrDie("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC);

  sigset_t all, old;
  sigfillset(&all);
  sigprocmask(SIG_BLOCK, &all, &old);
  g_child = ::fork();
  if (g_child < 0) Die("fork");
  if (g_child == 0) {
    sigprocmask(SIG_SETMASK, &old, nullptr);
    ::setsid();
    if (plan.uid != 0 || plan.gid != 0) {
      gid_t g = static_cast<gid_t>(plan.gid);
      if (::setgroups(1, &g) != 0 || ::setgid(g) != 0 || ::setuid(static_cast<uid_t>(plan.uid)) != 0) {
        Die("drop privileges");
      }
    }
    if (::chdir(plan.working_dir.c_str()) != 0) Die("chdir " + plan.working_dir);
    std::vector<char*> argv, envp;
    for (auto& a : plan.command) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : plan.env) envp.push_back(e.data());
    envp.push_back(nullptr);
    ::execvpe(argv[0], argv.data(), envp.data());
    Die("exec " + plan.command[0]);
  }

  struct sigaction sa {};
  sa.sa_handler = Forward;
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2}) ::sigaction(sig, &sa, nullptr);
  sigprocmask(SIG_SETMASK, &old, nullptr);

  // PID 1: reap everything; leave when the pod's command does.
  for (;;) {
    int status = 0;
    pid_t p = ::waitpid(-1, &status, 0);
    if (p < 0) {
      if (errno == EINTR) continue;
      return 127;
    }
    if (p == g_child) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
  }
}

}  // namespace hpc::runtime::local
