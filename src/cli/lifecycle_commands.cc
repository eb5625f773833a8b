#include "cli/lifecycle_commands.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <iostream>
#include <optional>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "api/environments.h"
#include "api/validation.h"
#include "app/environments.h"
#include "app/runtime_factory.h"
#include "common/files.h"
#include "common/printable.h"
#include "common/stop_signal.h"
#include "embedded_cluster.h"
#include "operator/conditions.h"
#include "operator/store.h"
#include "server/server.h"
#include "slurm/config.h"
#include "slurm/release.h"

namespace hpc::cli {

using nlohmann::json;

namespace {

Status Preflight() {
  if (::geteuid() != 0) {
    return Status::Error("hpcplane needs root to create namespaces and networks (run it with sudo)");
  }
  for (const char* bin :
       {"slurmctld", "slurmd", "slurmrestd", "munged", "slurmdbd", "mariadbd", "ip", "nsenter", "setpriv"}) {
    auto r = RunProcess({"sh", "-c", std::string("command -v ") + bin});
    if (!r.ok() || r->exit_code != 0) {
      return Status::Errorf("{} is not installed (run `make deps` or scripts/install-deps.sh)", bin);
    }
  }
  return Status::Ok();
}

Status StartDaemon(const Globals& g, const op::ClusterPaths& p) {
  pid_t pid = ::fork();
  if (pid < 0) return Status::Errorf("fork: {}", std::strerror(errno));
  if (pid == 0) {
    ::setsid();
    int null_fd = ::open("/dev/null", O_RDWR);
    int log_fd = ::open(p.LogFile().c_str(), O_WRONLY | O_CREAT | O_APPEND, 0640);
    ::dup2(null_fd, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execl(g.self_exe.c_str(), "hpcplane", "__daemon", p.state_dir.c_str(), p.name.c_str(), nullptr);
    _exit(127);
  }
  // Wait until it has written its pid file, or has died.
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    if (op::RunningDaemon(p) == pid) return Status::Ok();
    int status;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return Status::Errorf("the hpcplane daemon exited at start; see {}", p.LogFile());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Errorf("the hpcplane daemon did not start within 10s; see {}", p.LogFile());
}

// Prints a line as each component and nodeset becomes ready; returns once all are.
Status WaitReady(const op::ClusterPaths& p, Clock::time_point start, std::chrono::seconds timeout, bool quiet) {
  op::Store store(p.Dir());
  std::set<std::string> announced;
  const std::vector<std::string> order = {"munge",   "sackd", "mariadb", "slurmdbd", "controller", "controller-backup",
                                          "restapi", "login"};
  auto deadline = Clock::now() + timeout;
  std::string last_reason;
  while (Clock::now() < deadline) {
    if (op::RunningDaemon(p) == 0) return Status::Errorf("the hpcplane daemon stopped; see {}", p.LogFile());
    auto c = store.LoadCluster();
    auto nodesets = store.LoadNodeSets();
    if (c.ok() && nodesets.ok()) {
      for (const auto& comp : order) {
        auto it = c->status.components.find(comp);
        if (it != c->status.components.end() && it->second == "Ready" && announced.insert(comp).second && !quiet) {
          std::cout << fmt::format("  ✓ {:<22} ready   {:6.2f}s", comp, Seconds(start)) << std::endl;
        }
      }
      bool all_nodesets = true;
      for (const auto& ns : *nodesets) {
        const auto* ready = op::FindCondition(ns.status.conditions, "Ready");
        bool ok = ready && ready->status == "True" && ns.status.observed_generation == ns.metadata.generation;
        if (ok && announced.insert("nodeset/" + ns.metadata.name).second && !quiet) {
          std::cout << fmt::format("  ✓ {:<22} {}/{} workers  {:6.2f}s", "nodeset " + ns.metadata.name, ns.status.ready,
                                   ns.status.desired, Seconds(start))
                    << std::endl;
        }
        if (!ok) all_nodesets = false;
      }
      const auto* ready = op::FindCondition(c->status.conditions, "Ready");
      if (ready) last_reason = ready->message;
      if (ready && ready->status == "True" && all_nodesets && c->status.observed_generation == c->metadata.generation) {
        return Status::Ok();
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return Status::Errorf("cluster {} not Ready after {}s: {} (see `hpcplane status` and {})", p.name, timeout.count(),
                        last_reason, p.LogFile());
}

Status StopCluster(const Globals& g, const op::ClusterPaths& p, bool purge) {
  pid_t pid = op::RunningDaemon(p);
  if (pid != 0) {
    ::kill(pid, SIGTERM);
    auto deadline = Clock::now() + std::chrono::seconds(60);
    while (op::RunningDaemon(p) == pid && Clock::now() < deadline) {
      int status;
      ::waitpid(pid, &status, WNOHANG);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  // Also removes what a crashed daemon left behind: pods, namespaces, links, the bridge.
  op::Store store(p.Dir());
  if (store.HasCluster()) {
    RETURN_IF_ERROR(app::TeardownRuntime(p, g.self_exe));
  }
  ::unlink(p.PidFile().c_str());
  // Status describes pods that no longer exist; the next daemon computes it afresh.
  RETURN_IF_ERROR(files::RemoveAll(p.Dir() + "/status"));
  if (purge) RETURN_IF_ERROR(files::RemoveAll(p.Dir()));
  return Status::Ok();
}

// What a cluster stored by an hpcplane without environments ran: the host's Debian 12 Slurm.
constexpr const char* kEnvironmentBeforeImages = "slurm-22.05";

// A daemon feature's listen address, read by the daemon at its start: written when given
// (refused while the daemon runs), removed when not given and no daemon runs.
Status WriteListenConfig(const char* flag, const std::string& listen, const std::string& file, bool running) {
  if (listen.empty()) {
    if (!running) ::unlink(file.c_str());
    return Status::Ok();
  }
  if (running) return Status::Errorf("{}: the cluster already runs; bring it down first", flag);
  if (auto at = cp::ParseListenAddress(listen); !at.ok()) return Status::Errorf("{}: {}", flag, at.status().message());
  return files::WriteAtomic(file, json{{"listen", listen}}.dump() + "\n", 0600);
}

// What `up` brings up: without -f, the cluster the state dir holds (its stored specs,
// unchanged); the embedded demo cluster only when the state dir holds none. A cluster keeps the
// environment (so the Slurm release) it was created with: a new one is pinned to today's default,
// one stored before environments existed to the 22.05 it ran.
struct UpTarget {
  api::Manifest manifest;
  std::optional<op::ClusterPaths> stored;
};
Result<UpTarget> TargetOfUp(const Globals& g, const std::string& file) {
  UpTarget t;
  if (file.empty()) {
    auto resolved = ResolveCluster(g);
    if (resolved.ok()) {
      t.stored = *resolved;
    } else if (!g.cluster.empty()) {
      return Status::Errorf("cluster \"{}\" not found in {} (`up -f FILE` creates a cluster)", g.cluster, g.state_dir);
    } else if (!ListStoredClusters(g.state_dir).empty()) {
      return resolved.status();
    }
  }
  if (t.stored) {
    ASSIGN_OR_RETURN(api::SlurmCluster c, op::Store(t.stored->Dir()).LoadCluster());
    t.manifest.clusters.push_back(c);
    if (auto saved = op::Store(t.stored->Dir()).LoadNodeSets(); saved.ok()) t.manifest.nodesets = *saved;
  } else {
    ASSIGN_OR_RETURN(t.manifest, LoadManifest(file, std::nullopt));
  }
  if (t.manifest.clusters.empty()) return Status::Errorf("{}: `up` needs a SlurmCluster", file);
  api::SlurmCluster& c = t.manifest.clusters[0];
  if (c.spec.environment.empty()) {
    c.spec.environment = t.stored ? kEnvironmentBeforeImages : api::kDefaultEnvironment;
    if (t.stored) RETURN_IF_ERROR(op::Store(t.stored->Dir()).SaveCluster(c));
  }
  return t;
}

// The state dir holds keys, datasets and databases: root's alone (pods see only what they mount).
// A state dir hpcplane creates is 0700 too; one that exists is left as its owner made it.
Status MakeClusterDir(const Globals& g, const op::ClusterPaths& p) {
  const bool fresh_state_dir = !files::Exists(g.state_dir);
  RETURN_IF_ERROR(files::MakeDirs(p.Dir(), 0700));
  for (const std::string& dir : {g.state_dir + "/clusters", p.Dir()}) ::chmod(dir.c_str(), 0700);
  if (fresh_state_dir) ::chmod(g.state_dir.c_str(), 0700);
  return Status::Ok();
}

// `up` without --detach: waits while the daemon runs; Ctrl-C (or SIGTERM) brings the cluster down.
int RunInForeground(const Globals& g, const op::ClusterPaths& p) {
  std::cout << "Running in the foreground; press Ctrl-C to bring it down (or use --detach)." << std::endl;
  InstallStopHandlers();
  while (!StopFlag() && op::RunningDaemon(p) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (!StopFlag()) return Fail(Status::Errorf("the hpcplane daemon stopped; see {}", p.LogFile()));
  std::cout << "\nBringing cluster down..." << std::endl;
  if (Status s = StopCluster(g, p, false); !s.ok()) return Fail(s);
  return 0;
}

}  // namespace

int CmdUp(const Globals& g_in, const std::string& file, bool detach, int timeout_s, const std::string& control_plane,
          const std::string& metrics_listen) {
  Globals g = g_in;
  auto start = Clock::now();
  // Listen addresses are checked before anything is created.
  for (const auto& [flag, value] :
       {std::pair<const char*, std::string>{"--control-plane", control_plane}, {"--metrics-listen", metrics_listen}}) {
    if (value.empty()) continue;
    if (auto at = cp::ParseListenAddress(value); !at.ok())
      return Fail(Status::Errorf("{}: {}", flag, at.status().message()));
  }
  if (Status s = Preflight(); !s.ok()) return Fail(s);
  auto target = TargetOfUp(g, file);
  if (!target.ok()) return Fail(target.status());
  const std::optional<op::ClusterPaths>& stored = target->stored;
  const api::SlurmCluster& c = target->manifest.clusters[0];
  op::ClusterPaths p{g.state_dir, c.metadata.name};
  // The images the pods run from, built on first use (the first `up` of a release takes a
  // minute or two; later ones reuse them).
  Status images = app::EnsureClusterImages(g.state_dir, c, target->manifest.nodesets, [](const std::string& line) {
    std::cout << "  " << Printable(line) << std::endl;
  });
  if (!images.ok()) return Fail(images);
  pid_t running = op::RunningDaemon(p);
  if (running == 0) {
    // A subnet held by another cluster's network is refused before anything is created.
    if (Status free = app::CheckSubnetFree(p, c.metadata.name, c.spec.subnet); !free.ok()) return Fail(free);
  }
  if (Status s = MakeClusterDir(g, p); !s.ok()) return Fail(s);
  op::Store store(p.Dir());
  if (!stored) {
    if (Status s = store.SaveCluster(c); !s.ok()) return Fail(s);
    for (const auto& ns : target->manifest.nodesets) {
      if (Status s = store.SaveNodeSet(ns); !s.ok()) return Fail(s);
    }
  }
  // The daemon also serves the control plane (and runs this data plane's agent), and metrics.
  for (const auto& [flag, value, file] : {std::tuple<const char*, std::string, std::string>{
                                              "--control-plane", control_plane, p.Dir() + "/controlplane.json"},
                                          {"--metrics-listen", metrics_listen, p.Dir() + "/metrics.json"}}) {
    if (Status s = WriteListenConfig(flag, value, file, running != 0); !s.ok()) return Fail(s);
  }
  const char* source = stored ? "the state dir's cluster" : file.empty() ? "the embedded demo cluster" : "cluster";
  std::cout << fmt::format("Bringing up {} \"{}\" (subnet {}, state in {})", source, c.metadata.name, c.spec.subnet,
                           p.Dir())
            << std::endl;
  if (running == 0) {
    if (Status s = StartDaemon(g, p); !s.ok()) return Fail(s);
  }
  if (Status s = WaitReady(p, start, std::chrono::seconds(timeout_s), false); !s.ok()) return Fail(s);
  std::cout << fmt::format("Cluster \"{}\" is Ready in {:.2f}s.", c.metadata.name, Seconds(start)) << std::endl;
  if (!control_plane.empty()) {
    std::cout << fmt::format(
                     "Control plane on http://{}/api/v1 (admin token in {}/controlplane/admin.token); this "
                     "cluster reports as data plane \"{}\". Web console: http://{}/",
                     control_plane, g.state_dir, c.metadata.name, control_plane)
              << std::endl;
  }
  return detach ? 0 : RunInForeground(g, p);
}

int CmdDown(const Globals& g, bool purge) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  if (Status s = StopCluster(g, *p, purge); !s.ok()) return Fail(s);
  std::cout << fmt::format("Cluster \"{}\" is down{}.", p->name, purge ? " and its state removed" : "") << std::endl;
  return 0;
}

int CmdApply(const Globals& g, const std::string& file) {
  std::optional<api::SlurmCluster> stored;
  auto p = ResolveCluster(g);
  if (p.ok()) {
    auto c = op::Store(p->Dir()).LoadCluster();
    if (c.ok()) stored = *c;
  }
  auto m = LoadManifest(file, stored);
  if (!m.ok()) return Fail(m.status());
  std::string name = !m->clusters.empty() ? m->clusters[0].metadata.name : stored ? stored->metadata.name : "";
  op::ClusterPaths paths{g.state_dir, name};
  if (!files::Exists(paths.Dir() + "/cluster.json")) {
    return Fail(Status::Errorf("cluster \"{}\" is not up: use `hpcplane up -f {}`", name, file));
  }
  op::Store store(paths.Dir());
  if (!m->clusters.empty()) {
    auto old = store.LoadCluster();
    if (old.ok() && old->spec.subnet != m->clusters[0].spec.subnet) {
      return Fail(
          Status::Errorf("cluster \"{}\": spec.network.subnet cannot change while the cluster exists "
                         "(got {}, running on {})",
                         name, m->clusters[0].spec.subnet, old->spec.subnet));
    }
    // The environment decides Slurm's release: changing it restarts every daemon (`upgrade`).
    if (old.ok()) {
      auto& env = m->clusters[0].spec.environment;
      if (env.empty()) env = old->spec.environment;
      if (env != old->spec.environment) {
        return Fail(Status::FailedPrecondition(
            fmt::format("cluster \"{}\": spec.environment cannot change by apply (got {}, running {}): use `hpcplane "
                        "upgrade {}`, which checks the Slurm upgrade and restarts the cluster",
                        name, env, old->spec.environment, env)));
      }
    }
    if (Status s = store.SaveCluster(m->clusters[0]); !s.ok()) return Fail(s);
    std::cout << fmt::format("cluster/{} applied\n", name);
  }
  if (!m->nodesets.empty()) {
    auto c = store.LoadCluster();
    if (!c.ok()) return Fail(c.status());
    Status images = app::EnsureClusterImages(g.state_dir, *c, m->nodesets, [](const std::string& line) {
      std::cout << "  " << Printable(line) << std::endl;
    });
    if (!images.ok()) return Fail(images);
  }
  for (const auto& ns : m->nodesets) {
    if (Status s = store.SaveNodeSet(ns); !s.ok()) return Fail(s);
    std::cout << fmt::format("nodeset/{} applied\n", ns.metadata.name);
  }
  return 0;
}

namespace {

// Why a running cluster cannot move to `to` while its jobs run, or "" when it can (a rolling
// upgrade: ClusterReconciler and NodeSetReconciler do it).
std::string WhyNotRolling(const api::SlurmCluster& c, const slurm::Release& from, const slurm::Release& to) {
  if (c.spec.shared_root) {
    return "its workers share one root file system, made from the old release's image: it is made again while no pod "
           "runs";
  }
  if (slurm::DefaultAuth(from) != slurm::DefaultAuth(to)) {
    return fmt::format("Slurm {} authenticates with {} and {} with {}: every daemon changes at once", from.Series(),
                       slurm::DefaultAuth(from) == slurm::Auth::kMunge ? "munge" : "auth/slurm", to.Series(),
                       slurm::DefaultAuth(to) == slurm::Auth::kMunge ? "munge" : "auth/slurm");
  }
  return "";
}

// Waits until slurmctld answers with `to`'s release and every daemon runs it (what a rolling
// upgrade does before its workers).
Status WaitForController(const op::ClusterPaths& p, const slurm::Release& to, std::chrono::seconds timeout) {
  op::Store store(p.Dir());
  auto deadline = Clock::now() + timeout;
  std::string last;
  while (Clock::now() < deadline) {
    if (op::RunningDaemon(p) == 0) return Status::Errorf("the hpcplane daemon stopped; see {}", p.LogFile());
    auto c = store.LoadCluster();
    if (c.ok()) {
      // slurmctld answers with the new release, and every daemon's pod is ready on it (a pod kept
      // on the release before says "Ready, on Slurm ...").
      auto version = c->status.component_versions.find("slurm/slurmctld");
      bool moved = version != c->status.component_versions.end() && version->second.rfind(to.Series() + ".", 0) == 0 &&
                   c->status.components.count("controller");
      for (const auto& [component, state] : c->status.components) moved = moved && state == "Ready";
      if (moved) return Status::Ok();
      const auto* upgrading = op::FindCondition(c->status.conditions, "Upgrading");
      last = upgrading ? upgrading->message : "";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return Status::Errorf("cluster {}: slurmctld does not run Slurm {} after {}s: {} (see `hpcplane status` and {})",
                        p.name, to.Series(), timeout.count(), last, p.LogFile());
}

}  // namespace

namespace {

// The cluster with the upgrade policy the flags give (spec.upgrade), checked.
Result<api::SlurmCluster> WithUpgradePolicy(api::SlurmCluster c, const UpgradeArgs& args) {
  if (!args.drain_deadline.empty()) {
    auto seconds = api::ParseDurationSeconds(args.drain_deadline);
    if (!seconds.ok()) return seconds.status().WithContext("--drain-deadline");
    c.spec.upgrade.drain_deadline_seconds = *seconds;
  }
  if (!args.after_deadline.empty()) {
    std::string policy = args.after_deadline;
    std::transform(policy.begin(), policy.end(), policy.begin(), ::tolower);
    policy[0] = static_cast<char>(::toupper(policy[0]));
    c.spec.upgrade.after_deadline = policy;
  }
  RETURN_IF_ERROR(api::Validate(c));
  return c;
}

// What becomes of a drained old worker's jobs past the deadline, in words.
std::string AfterDeadlineInWords(const api::UpgradeSpec& up) {
  return fmt::format("after {} drained, their jobs are {}", api::FormatDuration(up.drain_deadline_seconds),
                     up.after_deadline == api::kAfterDeadlineWait      ? "left to finish"
                     : up.after_deadline == api::kAfterDeadlineRequeue ? "requeued"
                                                                       : "cancelled");
}

// The running daemon follows the spec (Daemon::FollowEnvironment): slurmdbd, then slurmctld with
// its saved state, then sackd, slurmrestd and login pods; each worker is drained and replaced once
// its jobs end, new workers on the new release taking the queue meanwhile.
int RollingUpgrade(const op::ClusterPaths& p, op::Store& store, const api::SlurmCluster& next,
                   const slurm::Release& from, const slurm::Release& to, const UpgradeArgs& args,
                   Clock::time_point start) {
  std::cout << fmt::format(
                   "Rolling upgrade of cluster \"{}\" from Slurm {} to {} ({}): slurmdbd, then slurmctld, then workers "
                   "as their jobs end",
                   p.name, from.ToString(), to.ToString(), args.environment)
            << std::endl;
  if (Status s = store.SaveCluster(next); !s.ok()) return Fail(s);
  if (Status s = WaitForController(p, to, std::chrono::seconds(args.timeout_s)); !s.ok()) return Fail(s);
  std::cout << fmt::format("  ✓ slurmdbd and slurmctld run Slurm {}  {:6.2f}s", to.Series(), Seconds(start))
            << std::endl;
  int outdated = 0;
  if (auto now = store.LoadNodeSets(); now.ok()) {
    for (const auto& ns : *now) outdated += ns.status.outdated;
  }
  std::cout << fmt::format("Cluster \"{}\" runs Slurm {} ({:.2f}s).", p.name, to.ToString(), Seconds(start));
  if (outdated > 0) {
    std::cout << fmt::format(
        " {} worker(s) on Slurm {} finish their jobs and are then replaced; {} (`hpcplane upgrade {} "
        "--after-deadline requeue|cancel` changes it).",
        outdated, from.Series(), AfterDeadlineInWords(next.spec.upgrade), args.environment);
  }
  std::cout << std::endl;
  return 0;
}

// Every daemon starts again on the new release: slurmdbd converts the job history, slurmctld
// reads the saved queue; jobs running on workers end with their workers.
int RestartUpgrade(const Globals& g, const op::ClusterPaths& p, op::Store& store, const api::SlurmCluster& next,
                   const slurm::Release& to, const std::string& why, Clock::time_point start, int timeout_s) {
  const bool was_running = op::RunningDaemon(p) != 0;
  if (was_running) std::cout << "  the cluster restarts, and jobs running on its workers end: " << why << std::endl;
  if (Status s = StopCluster(g, p, false); !s.ok()) return Fail(s);
  if (next.spec.shared_root) {
    // Made from the old release's image; what was installed there must be installed again.
    if (Status s = app::ResetSharedRoot(p); !s.ok()) return Fail(s);
    std::cout << "  the shared root is made again from " << next.spec.environment << ": reinstall what was added to it"
              << std::endl;
  }
  if (Status s = store.SaveCluster(next); !s.ok()) return Fail(s);
  if (!was_running) return 0;
  if (Status s = StartDaemon(g, p); !s.ok()) return Fail(s);
  if (Status s = WaitReady(p, start, std::chrono::seconds(timeout_s), false); !s.ok()) return Fail(s);
  std::cout << fmt::format("Cluster \"{}\" runs Slurm {} ({:.2f}s).", p.name, to.ToString(), Seconds(start))
            << std::endl;
  return 0;
}

}  // namespace

int CmdUpgrade(const Globals& g, const UpgradeArgs& args) {
  auto start = Clock::now();
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  auto c = store.LoadCluster();
  if (!c.ok()) return Fail(c.status());
  auto next = WithUpgradePolicy(*c, args);
  if (!next.ok()) return Fail(next.status());
  const std::string from = api::ClusterEnvironment(*c);
  if (from == args.environment) {
    const bool policy_changed = !(next->spec.upgrade.drain_deadline_seconds == c->spec.upgrade.drain_deadline_seconds &&
                                  next->spec.upgrade.after_deadline == c->spec.upgrade.after_deadline);
    if (policy_changed) {
      if (Status s = store.SaveCluster(*next); !s.ok()) return Fail(s);
    }
    std::cout << fmt::format(
        "cluster \"{}\" already runs {}{}\n", p->name, args.environment,
        policy_changed ? "; workers still on an older image: " + AfterDeadlineInWords(next->spec.upgrade) : "");
    return 0;
  }
  auto progress = [](const std::string& line) { std::cout << "  " << Printable(line) << std::endl; };
  auto env = app::FindEnvironment(g.state_dir, args.environment);
  if (!env.ok()) return Fail(env.status());
  auto image = app::BuildEnvironment(g.state_dir, *env, false, progress);
  if (!image.ok()) return Fail(image.status());
  auto to_release = app::ImageSlurmRelease(*image);
  auto from_release = app::EnvironmentRelease(g.state_dir, from);
  if (!from_release.ok()) return Fail(from_release.status().WithContext("cluster \"" + p->name + "\""));
  if (!to_release) return Fail(Status::FailedPrecondition("environment \"" + args.environment + "\" holds no Slurm"));
  if (Status s = slurm::CheckUpgrade(*from_release, *to_release); !s.ok()) {
    return Fail(s.WithContext(fmt::format("cluster \"{}\" ({} to {})", p->name, from, args.environment)));
  }
  next->spec.environment = args.environment;
  auto nodesets = store.LoadNodeSets();
  if (!nodesets.ok()) return Fail(nodesets.status());
  if (Status s = app::EnsureClusterImages(g.state_dir, *next, *nodesets, progress); !s.ok()) return Fail(s);
  const std::string why_not_rolling =
      args.restart ? "asked for (--restart)" : WhyNotRolling(*c, *from_release, *to_release);
  if (op::RunningDaemon(*p) != 0 && why_not_rolling.empty()) {
    return RollingUpgrade(*p, store, *next, *from_release, *to_release, args, start);
  }
  std::cout << fmt::format("Upgrading cluster \"{}\" from Slurm {} ({}) to {} ({})", p->name, from_release->ToString(),
                           from, to_release->ToString(), args.environment)
            << std::endl;
  return RestartUpgrade(g, *p, store, *next, *to_release, why_not_rolling, start, args.timeout_s);
}

int CmdDelete(const Globals& g, const std::string& kind, const std::string& name) {
  if (kind != "nodeset") return Fail(Status::Errorf("delete: unknown kind \"{}\" (nodeset)", kind));
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  if (store.HasWorkspace(name)) {
    return Fail(
        Status::Errorf("nodeset \"{}\" belongs to workspace {}: use `hpcplane workspace stop {}`", name, name, name));
  }
  if (!store.LoadNodeSet(name).ok()) return Fail(Status::Errorf("nodeset \"{}\" not found", name));
  if (Status s = store.DeleteNodeSet(name); !s.ok()) return Fail(s);
  std::cout << fmt::format("nodeset/{} deleted; its workers are drained and removed as their jobs end\n", name);
  return 0;
}

int CmdScale(const Globals& g, const std::string& kind, const std::string& name, std::optional<int> replicas, bool wait,
             int timeout_s) {
  if (kind != "nodeset") return Fail(Status::Errorf("scale: unknown kind \"{}\" (nodeset)", kind));
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  auto c = store.LoadCluster();
  if (!c.ok()) return Fail(c.status());
  if (store.HasWorkspace(name)) {
    return Fail(
        Status::Errorf("nodeset \"{}\" belongs to workspace {} and is autoscaled up to its --max-workers", name, name));
  }
  auto n = store.LoadNodeSet(name);
  if (!n.ok()) return Fail(Status::Errorf("nodeset \"{}\" not found in cluster {}", name, p->name));
  if (!replicas) {
    n->spec.replicas.reset();
    if (Status s = store.SaveNodeSet(*n); !s.ok()) return Fail(s);
    std::cout << fmt::format("nodeset/{} is autoscaled again (workers follow pending jobs, idle ones leave after {})\n",
                             name, api::FormatDuration(n->spec.idle_timeout_seconds));
    return 0;
  }
  if (*replicas < 0) return Fail(Status::Errorf("nodeset \"{}\": --replicas: must be >= 0 (got {})", name, *replicas));
  int min = n->MinReplicas(c->spec.min_replica_count);
  int clamped = std::clamp(*replicas, min, n->spec.max_replicas);
  if (clamped != *replicas) {
    std::cout << fmt::format("nodeset/{}: {} is outside minReplicas..maxReplicas ({}..{}); using {}\n", name, *replicas,
                             min, n->spec.max_replicas, clamped);
  }
  n->spec.replicas = clamped;
  if (Status s = store.SaveNodeSet(*n); !s.ok()) return Fail(s);
  std::cout << fmt::format("nodeset/{} scaled to {} (pinned; `--auto` hands it back to the autoscaler)\n", name,
                           clamped);
  if (!wait) return 0;
  auto deadline = Clock::now() + std::chrono::seconds(timeout_s);
  while (Clock::now() < deadline) {
    auto cur = store.LoadNodeSet(name);
    if (cur.ok() && cur->status.observed_generation == cur->metadata.generation && cur->status.replicas == clamped &&
        cur->status.ready == clamped && cur->status.draining == 0) {
      std::cout << fmt::format("nodeset/{}: {} workers ready\n", name, clamped);
      return 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  auto cur = store.LoadNodeSet(name);
  return Fail(Status::Errorf("nodeset/{} did not reach {} workers in {}s (now {}, busy {}, draining {}): {}", name,
                             clamped, timeout_s, cur.ok() ? cur->status.replicas : -1, cur.ok() ? cur->status.busy : -1,
                             cur.ok() ? cur->status.draining : -1, cur.ok() ? cur->status.last_decision : ""));
}

}  // namespace hpc::cli
