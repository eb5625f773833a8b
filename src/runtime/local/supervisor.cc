#include "runtime/local/local_runtime_internal.h"
#include "runtime/local/pod_firewall.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/files.h"

namespace hpc::runtime::local {

using nlohmann::json;

int64_t DescendantsRssKiB(pid_t pid) {
  int64_t total = 0;
  std::vector<pid_t> todo = {pid};
  while (!todo.empty()) {
    pid_t p = todo.back();
    todo.pop_back();
    std::ifstream status("/proc/" + std::to_string(p) + "/status");
    std::string line;
    while (p != pid && std::getline(status, line)) {
      if (line.rfind("VmRSS:", 0) == 0) total += std::atoll(line.c_str() + 6);
    }
    for (const auto& task : files::ListDir("/proc/" + std::to_string(p) + "/task")) {
      std::ifstream children("/proc/" + std::to_string(p) + "/task/" + task + "/children");
      pid_t child = 0;
      while (children >> child) todo.push_back(child);
    }
  }
  return total;
}

void LocalRuntime::WatchRunningPod(const std::string& name, const PodSpec& spec, PodState* st, int64_t now_ms) {
  if (!Started(name, *st)) return;  // nothing to probe or measure of a pod still being built
  if (now_ms >= next_probe_ms_[name]) {
    st->ready = ProbeReady(spec, *st);
    // Probe often until ready. A ready TCP server is not probed again (each probe is a
    // connection the daemon logs as an error); process supervision covers its death.
    // A pod with a liveness probe is watched by that once ready.
    const bool tcp = spec.readiness.tcp_port > 0;
    next_probe_ms_[name] = now_ms + (!st->ready ? 25 : tcp || spec.liveness.Set() ? INT64_MAX / 2 : 10000);
    if (st->ready && UnixNow() - st->started_at > 10) st->consecutive_failures = 0;
  }
  const LivenessProbe& live = spec.liveness;
  if (live.Set() && st->ready && now_ms >= next_liveness_ms_[name]) {
    next_liveness_ms_[name] = now_ms + live.period_seconds * 1000LL;
    if (ProbeAlive(spec, *st)) {
      liveness_failures_[name] = 0;
    } else if (++liveness_failures_[name] >= live.failure_threshold) {
      // Hung, not dead: as PID 1 of the pod, its death ends every process in it; the exit
      // below restarts it by its policy.
      killed_why_[name] = fmt::format("killed: its liveness probe failed {} times in a row ({} s apart)",
                                      liveness_failures_[name], live.period_seconds);
      liveness_failures_[name] = 0;
      spdlog::warn("pod {} {}", name, killed_why_[name]);
      ::kill(st->pid, SIGKILL);
    }
  }
  const int64_t limit_mib = spec.resources.limits.memory_mib;
  // Without cgroups the supervisor is what enforces the memory limit.
  const bool unconfined = cgroups_.hierarchy() == CgroupHierarchy::kNone;
  if (unconfined && limit_mib > 0 && now_ms >= next_memory_check_ms_[name]) {
    next_memory_check_ms_[name] = now_ms + 1000;
    // What runs under the pod's init: the init is hpcplane's, not the workload's.
    int64_t rss_mib = DescendantsRssKiB(st->pid) / 1024;
    if (rss_mib > limit_mib) {
      // As PID 1 of the pod, its death ends every process in it; the exit below restarts it.
      killed_why_[name] =
          fmt::format("killed: its processes used {} MiB, over its memory limit of {} MiB", rss_mib, limit_mib);
      spdlog::warn("pod {} {}", name, killed_why_[name]);
      ::kill(st->pid, SIGKILL);
    }
  }
}

void LocalRuntime::HandleExitedPod(const std::string& name, const PodSpec& spec, PodState* st, const PodState& before,
                                   int64_t now_ms) {
  if (st->pid > 0) {
    auto it = reaped_.find(st->pid);
    st->last_exit = it != reaped_.end() ? it->second : -1;
    if (it != reaped_.end()) reaped_.erase(it);
    bool ran_long = UnixNow() - st->started_at > 10;
    st->consecutive_failures = ran_long ? 1 : st->consecutive_failures + 1;
    const auto policy = spec.restart_policy;
    bool restart = policy == RestartPolicy::kAlways || (policy == RestartPolicy::kOnFailure && st->last_exit != 0);
    st->message = fmt::format("exited with status {}", st->last_exit);
    if (st->last_exit == 128 + SIGKILL && cgroups_.OomKills(name) > oom_kills_at_start_[name]) {
      // The kernel enforced the limit: the pod's main process is what it killed.
      killed_why_[name] = fmt::format("killed: its processes went over its memory limit of {} MiB (OOM killer)",
                                      spec.resources.limits.memory_mib);
    }
    if (auto k = killed_why_.find(name); k != killed_why_.end()) {
      st->message = k->second;
      killed_why_.erase(k);
    }
    st->pid = 0;
    st->pid_start = 0;
    st->ready = false;
    if (!restart) {
      st->stopped = true;
    } else {
      // Exponential backoff from 200 ms, capped at 10 s.
      int64_t delay = std::min<int64_t>(10000, 200LL << std::min(st->consecutive_failures - 1, 6));
      next_start_ms_[name] = now_ms + delay;
      spdlog::warn("pod {} {}; restarting in {} ms", name, st->message, delay);
    }
  }
  if (!st->stopped && now_ms >= next_start_ms_[name]) {
    if (before.pid == 0 && before.started_at > 0) ++st->restarts;
    Status s = StartPod(spec, st);
    if (!s.ok()) {
      spdlog::error("{}", s.message());
      next_start_ms_[name] = now_ms + 2000;
    }
  }
}

SupervisionResult LocalRuntime::Supervise() {
  SupervisionResult result;
  const int64_t now = NowMs();
  for (const auto& name : files::ListDir(opts_.dir + "/pods")) {
    auto spec = GetPodSpec(name);
    auto st = LoadState(name);
    if (!spec.ok() || !*spec || !st.ok()) continue;
    PodState before = *st;
    // Reap the pod's init if it was started here and ended (a zombie still reads as Alive);
    // adopted pods are not our children and are checked by start time. Only pods: a
    // waitpid(-1) would also take the processes other threads wait for (an exec's, a
    // terminal's shell), whose own waitpid would then fail, or wait on the pid's next owner.
    if (st->pid > 0) {
      int status = 0;
      if (::waitpid(st->pid, &status, WNOHANG) == st->pid) {
        reaped_[st->pid] = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    if (st->Alive()) {
      WatchRunningPod(name, **spec, &*st, now);
    } else if (!st->stopped) {
      HandleExitedPod(name, **spec, &*st, before, now);
    }
    if (st->pid != before.pid || st->ready != before.ready || st->stopped != before.stopped ||
        st->message != before.message || st->restarts != before.restarts) {
      if (Status s = SaveState(name, *st); !s.ok()) spdlog::error("pod {}: {}", name, s.message());
      result.changed = true;
    }
    if (!st->stopped && !(st->Alive() && st->ready)) result.settled = false;
  }
  return result;
}

Status LocalRuntime::Teardown() {
  Status first;
  // TERM everything first so pods stop in parallel, then collect.
  auto names = files::ListDir(opts_.dir + "/pods");
  for (const auto& name : names) {
    auto st = LoadState(name);
    if (st.ok() && st->Alive()) ::kill(st->pid, SIGTERM);
  }
  for (const auto& name : names) {
    Status s = DeletePod(name);
    if (!s.ok() && first.ok()) first = s;
  }
  // Safety net: any pod init still running from this runtime's directory (its state file lost
  // or rewritten mid-crash) is ours by its command line; killing it ends its whole pod.
  const std::string marker = opts_.dir + "/pods/";
  for (const auto& entry : files::ListDir("/proc")) {
    if (entry.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmdline = files::Read("/proc/" + entry + "/cmdline");
    if (!cmdline.ok() || cmdline->find("__pod-init") == std::string::npos ||
        cmdline->find(marker) == std::string::npos) {
      continue;
    }
    pid_t pid = std::stoi(entry);
    spdlog::warn("killing leftover pod init {} ({})", pid, marker);
    ::kill(pid, SIGKILL);
  }
  Status s = network_.DeleteAll();
  if (!s.ok() && first.ok()) first = s;
  s = cgroups_.RemoveAll();
  if (!s.ok() && first.ok()) first = s;
  s = DeleteNftablesTable(FirewallTable());  // the policies stay, and hold again at the next start
  if (!s.ok() && first.ok()) first = s;
  firewall_loaded_.reset();
  return first;
}

}  // namespace hpc::runtime::local
