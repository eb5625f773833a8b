#include "app/daemon.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <tuple>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "api/environments.h"
#include "app/control_plane_process.h"
#include "app/environments.h"
#include "app/local_data_plane.h"
#include "app/runtime_factory.h"
#include "common/change_watch.h"
#include "common/files.h"
#include "common/jwt.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "operator/daemon_metrics.h"
#include "operator/metrics_endpoint.h"
#include "operator/pass_schedule.h"
#include "operator/reconcile_pass.h"
#include "operator/store.h"
#include "platform/catalog.h"
#include "server/server.h"
#include "server/store.h"
#include "slurm/config.h"

namespace hpc::app {
using namespace hpc::op;
namespace {

// With `up --control-plane` (controlplane.json): the control plane's API on the configured
// address, and this data plane's agent beside it with a token of its own (0600).
Result<std::unique_ptr<ControlPlaneProcess>> StartControlPlane(const ClusterPaths& p, const std::string& self_exe,
                                                               const std::string& config) {
  auto cfg = nlohmann::json::parse(config, nullptr, false);
  std::string listen = cfg.is_object() && cfg["listen"].is_string() ? cfg["listen"].get<std::string>() : "";
  auto listen_at = cp::ParseListenAddress(listen);
  if (!listen_at.ok()) return Status::Errorf("controlplane.json: {}", listen_at.status().message());
  ASSIGN_OR_RETURN(auto process, ControlPlaneProcess::Start({p.state_dir, "", *listen_at}));
  spdlog::info("control plane API on http://{}:{}/api/v1", listen_at->host, process->port());
  RETURN_IF_ERROR(process->WriteTokenIfMissing(p.Dir() + "/agent.token", p.name, cp::Role::kAgent));
  cp::AgentOptions a;
  a.server = process->LocalUrl();
  ASSIGN_OR_RETURN(a.token, files::Read(p.Dir() + "/agent.token"));
  while (!a.token.empty() && a.token.back() == '\n') a.token.pop_back();
  process->StartAgent(p, self_exe, a);
  return process;
}

// The daemon of one cluster: Open() assembles it, Loop() runs supervision and passes until the
// stop signal, Shutdown() stops what Open() started and removes the cluster's pods and network.
class Daemon {
 public:
  Daemon(ClusterPaths p, std::string self_exe) : p_(std::move(p)), self_exe_(std::move(self_exe)), store_(p_.Dir()) {}

  // The cluster's spec and images, the runtime, the pid file, the controllers, and what `up`
  // asked for beside them. A failure ends the daemon before its loop.
  Status Open() {
    ASSIGN_OR_RETURN(api::SlurmCluster cluster, store_.LoadCluster());
    ASSIGN_OR_RETURN(BuildInputs inputs, InputsFor(cluster));
    ASSIGN_OR_RETURN(rt_, OpenSupervisingRuntime(p_, cluster.spec.subnet, self_exe_));
    if (RunningDaemon(p_) != 0) return Status::Errorf("another daemon already runs for cluster {}", p_.name);
    // Status left by an earlier daemon may describe pods that are gone; it is computed afresh
    // (before the pid file appears, so `up` never waits on stale status).
    if (Status s = files::RemoveAll(p_.Dir() + "/status"); !s.ok()) spdlog::warn("old status: {}", s.message());
    RETURN_IF_ERROR(
        files::WriteAtomic(p_.PidFile(), fmt::format("{} {}\n", ::getpid(), hpc::ProcessStartTime(::getpid()))));
    InstallStopHandlers();
    spdlog::info("daemon for cluster {} started (pid {})", p_.name, ::getpid());

    GiveDatasetsTheirGroups(store_, platform::Catalog(p_.state_dir));
    ASSIGN_OR_RETURN(controllers_, NewClusterControllers(rt_.get(), inputs, p_.name, p_.Dir() + "/owned.json"));
    environment_ = api::ClusterEnvironment(cluster);
    // With `up --control-plane`, the control plane's API and this data plane's agent run here too.
    if (auto cfg = files::Read(p_.Dir() + "/controlplane.json"); cfg.ok()) {
      auto started = StartControlPlane(p_, self_exe_, *cfg);
      if (started.ok()) {
        control_plane_ = std::move(*started);
      } else {
        spdlog::error("control plane: {}", started.status().message());
      }
    }
    // With `up --metrics-listen`, Prometheus metrics for holders of the cluster's metrics.token.
    if (auto cfg = files::Read(p_.Dir() + "/metrics.json"); cfg.ok()) StartMetrics(*cfg);
    return Status::Ok();
  }

  // Sleeps until the next supervision or pass falls due, woken at once by a change to a probed
  // file (a submission, a spec): an idle cluster costs no ticks, and a submission starts a pass
  // in the time it takes inotify to deliver. Pods starting are watched every 20 ms.
  void Loop() {
    PassSchedule::Options schedule_options;
    // The idle safety pass; tests set it far out to prove that no submission is missed.
    if (const char* v = std::getenv("HPCPLANE_IDLE_PASS_SECONDS"); v && std::atoi(v) > 0) {
      schedule_options.idle = std::chrono::seconds(std::atoi(v));
    }
    PassSchedule schedule(schedule_options);
    const std::vector<std::string> probed = {rt_->VolumePath(kVolumeControllerState) + "/" + slurm::kSubmitMarkerFile,
                                             p_.Dir() + "/cluster.json", p_.Dir() + "/nodesets",
                                             p_.Dir() + "/workspaces"};
    ChangeWatch watch(probed);
    if (!watch.watching()) spdlog::warn("inotify unavailable: submissions are noticed within a second");
    auto next_supervise = Clock::now();
    while (!StopFlag()) {
      if (Clock::now() >= next_supervise) next_supervise = Supervise(schedule);
      const std::string stamp = ChangeStamp(probed);
      if (schedule.Due(Clock::now(), stamp)) Pass(schedule, stamp);
      const auto wake = std::min(next_supervise, schedule.NextCheck(stamp));
      auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now());
      wait = std::clamp(wait, std::chrono::milliseconds(0),
                        settled_ ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(20));
      if (wait.count() > 0) watch.Wait(wait);
    }
  }

  // Stops the metrics endpoint and the control plane, then every pod, and removes the network.
  Status Shutdown() {
    metrics_endpoint_.reset();
    control_plane_.reset();
    spdlog::info("stopping: removing pods and network of cluster {}", p_.name);
    Status s = rt_->Teardown();
    if (!s.ok()) spdlog::error("teardown: {}", s.message());
    ::unlink(p_.PidFile().c_str());
    spdlog::info("daemon stopped");
    return s;
  }

 private:
  using Clock = std::chrono::steady_clock;

  // What the controllers build from: the host's accounts, the built images (held while this
  // daemon runs) and the Slurm release of the cluster's environment.
  Result<BuildInputs> InputsFor(const api::SlurmCluster& cluster) {
    ASSIGN_OR_RETURN(BuildInputs inputs, HostBuildInputs());
    RETURN_IF_ERROR(ResolveClusterImages(p_.state_dir, cluster, &inputs));
    RETURN_IF_ERROR(HoldResolvedImages(p_.state_dir, p_.Dir() + "/held-images", inputs));
    inputs.job_cgroups = HostJobCgroups();
    return inputs;
  }

  // `hpcplane upgrade` changed the environment (and with it Slurm's release): the controllers
  // are made again for it, and their passes roll the cluster over (slurmdbd, slurmctld, then the
  // workers as their jobs end). The pods keep running throughout. On failure the old controllers
  // stay, and the next pass tries again.
  void FollowEnvironment() {
    auto cluster = store_.LoadCluster();
    if (!cluster.ok() || api::ClusterEnvironment(*cluster) == environment_) return;
    const std::string to = api::ClusterEnvironment(*cluster);
    auto inputs = InputsFor(*cluster);
    auto controllers = inputs.ok() ? NewClusterControllers(rt_.get(), *inputs, p_.name, p_.Dir() + "/owned.json")
                                   : Result<std::unique_ptr<ClusterControllers>>(inputs.status());
    if (!controllers.ok()) {
      spdlog::error("cluster {}: environment {} -> {}: {}", p_.name, environment_, to, controllers.status().message());
      return;
    }
    spdlog::info("cluster {}: environment {} -> {} (Slurm {}): rolling the cluster over", p_.name, environment_, to,
                 inputs->release.ToString());
    controllers_ = std::move(*controllers);
    environment_ = to;
  }

  void StartMetrics(const std::string& config) {
    auto j = nlohmann::json::parse(config, nullptr, false);
    auto at = cp::ParseListenAddress(j.is_object() && j["listen"].is_string() ? j["listen"].get<std::string>() : "");
    auto started = at.ok() ? MetricsEndpoint::Start(at->host, at->port, p_.Dir() + "/metrics.token",
                                                    [this] { return metrics_.Render(); })
                           : Result<std::unique_ptr<MetricsEndpoint>>(at.status());
    if (!started.ok()) {
      spdlog::error("metrics: {}", started.status().message());
      return;
    }
    metrics_endpoint_ = std::move(*started);
    spdlog::info("metrics on http://{}:{}/metrics (token in {}/metrics.token)", at->host, metrics_endpoint_->port(),
                 p_.Dir());
  }

  // A pod that became ready (or died) is reacted to at once, not at the next pass. Returns when
  // to supervise next: pods starting are watched closely; settled ones often, and only every
  // second when idle.
  Clock::time_point Supervise(PassSchedule& schedule) {
    const auto now = Clock::now();
    auto supervised = rt_->Supervise();
    if (supervised.changed) {
      schedule.PassNow();
      something_moved_ = true;
    }
    settled_ = supervised.settled;
    return now + (!settled_         ? std::chrono::milliseconds(20)
                  : schedule.idle() ? std::chrono::milliseconds(1000)
                                    : std::chrono::milliseconds(200));
  }

  void Pass(PassSchedule& schedule, const std::string& stamp) {
    const bool was_idle = schedule.idle();
    if (was_idle && schedule.Moved(stamp)) spdlog::info("woken by a change (a submission or a spec)");
    // A pass for something that just moved reads the queue afresh, never a reused listing.
    if (something_moved_ || schedule.Moved(stamp)) controllers_->listing.Invalidate();
    something_moved_ = false;
    FollowEnvironment();
    const auto pass_start = Clock::now();
    PassOutcome outcome = ReconcileOnce(store_, *controllers_, &metrics_);
    metrics_.ObservePass(std::chrono::duration<double>(Clock::now() - pass_start).count());
    schedule.Done(Clock::now(), outcome, stamp);
    if (!was_idle && schedule.idle()) {
      spdlog::info("cluster {} is idle: Slurm is asked again on a submission or a spec change, at the latest in {}s",
                   p_.name, std::chrono::duration_cast<std::chrono::seconds>(schedule.options().idle).count());
    }
  }

  const ClusterPaths p_;
  const std::string self_exe_;
  Store store_;
  std::unique_ptr<runtime::local::LocalRuntime> rt_;
  std::unique_ptr<ClusterControllers> controllers_;
  std::string environment_;  // the cluster environment controllers_ were made for
  std::unique_ptr<ControlPlaneProcess> control_plane_;
  DaemonMetrics metrics_;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint_;
  bool settled_ = false;
  bool something_moved_ = false;
};

}  // namespace

int RunDaemon(const ClusterPaths& p, const std::string& self_exe) {
  log::InitFile(p.LogFile(), false);
  Daemon daemon(p, self_exe);
  if (Status s = daemon.Open(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  daemon.Loop();
  return daemon.Shutdown().ok() ? 0 : 1;
}

}  // namespace hpc::app
