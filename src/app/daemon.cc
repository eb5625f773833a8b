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

#include "app/control_plane_process.h"
#include "app/environments.h"
#include "app/local_data_plane.h"
#include "app/runtime_factory.h"
#include "common/change_watch.h"
#include "common/files.h"
#include "common/jwt.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "controlplane/agent.h"
#include "controlplane/server.h"
#include "controlplane/store.h"
#include "operator/daemon_metrics.h"
#include "operator/metrics_endpoint.h"
#include "operator/pass_schedule.h"
#include "operator/reconcile_pass.h"
#include "operator/store.h"
#include "platform/catalog.h"
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

}  // namespace

int RunDaemon(const ClusterPaths& p, const std::string& self_exe) {
  log::InitFile(p.LogFile(), false);
  Store store(p.Dir());
  auto cluster = store.LoadCluster();
  if (!cluster.ok()) {
    spdlog::error("{}", cluster.status().message());
    return 1;
  }
  auto inputs = HostBuildInputs();
  if (!inputs.ok()) {
    spdlog::error("{}", inputs.status().message());
    return 1;
  }
  if (Status s = ResolveClusterImages(p.state_dir, *cluster, &*inputs); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }
  auto rt_or = OpenSupervisingRuntime(p, cluster->spec.subnet, self_exe);
  if (!rt_or.ok()) {
    spdlog::error("{}", rt_or.status().message());
    return 1;
  }
  auto rt = std::move(rt_or).value();
  inputs->job_cgroups = HostJobCgroups();
  if (RunningDaemon(p) != 0) {
    spdlog::error("another daemon already runs for cluster {}", p.name);
    return 1;
  }
  // Status left by an earlier daemon may describe pods that are gone; it is computed afresh
  // (before the pid file appears, so `up` never waits on stale status).
  (void)files::RemoveAll(p.Dir() + "/status");
  {
    std::string pid_line = fmt::format("{} {}\n", ::getpid(), hpc::ProcessStartTime(::getpid()));
    Status s = files::WriteAtomic(p.PidFile(), pid_line);
    if (!s.ok()) {
      spdlog::error("{}", s.message());
      return 1;
    }
  }
  InstallStopHandlers();
  spdlog::info("daemon for cluster {} started (pid {})", p.name, ::getpid());

  GiveDatasetsTheirGroups(store, platform::Catalog(p.state_dir));
  auto controllers = NewClusterControllers(rt.get(), *inputs, p.name, p.Dir() + "/owned.json");
  if (!controllers.ok()) {
    spdlog::error("{}", controllers.status().message());
    return 1;
  }

  // With `up --control-plane`, the control plane's API and this data plane's agent run here too.
  std::unique_ptr<ControlPlaneProcess> control_plane;
  if (auto cfg = files::Read(p.Dir() + "/controlplane.json"); cfg.ok()) {
    auto started = StartControlPlane(p, self_exe, *cfg);
    if (started.ok()) {
      control_plane = std::move(*started);
    } else {
      spdlog::error("control plane: {}", started.status().message());
    }
  }

  // With `up --metrics-listen`, Prometheus metrics for holders of the cluster's metrics.token.
  DaemonMetrics metrics;
  std::unique_ptr<MetricsEndpoint> metrics_endpoint;
  if (auto cfg = files::Read(p.Dir() + "/metrics.json"); cfg.ok()) {
    auto j = nlohmann::json::parse(*cfg, nullptr, false);
    auto at = cp::ParseListenAddress(j.is_object() && j["listen"].is_string() ? j["listen"].get<std::string>() : "");
    auto started = at.ok() ? MetricsEndpoint::Start(at->host, at->port, p.Dir() + "/metrics.token",
                                                    [&metrics] { return metrics.Render(); })
                           : Result<std::unique_ptr<MetricsEndpoint>>(at.status());
    if (started.ok()) {
      metrics_endpoint = std::move(*started);
      spdlog::info("metrics on http://{}:{}/metrics (token in {}/metrics.token)", at->host, metrics_endpoint->port(),
                   p.Dir());
    } else {
      spdlog::error("metrics: {}", started.status().message());
    }
  }

  using Clock = std::chrono::steady_clock;
  PassSchedule::Options schedule_options;
  // The idle safety pass; tests set it far out to prove that no submission is missed.
  if (const char* v = std::getenv("HPCPLANE_IDLE_PASS_SECONDS"); v && std::atoi(v) > 0) {
    schedule_options.idle = std::chrono::seconds(std::atoi(v));
  }
  PassSchedule schedule(schedule_options);
  const std::vector<std::string> probed = {rt->VolumePath(kVolumeControllerState) + "/" + slurm::kSubmitMarkerFile,
                                           p.Dir() + "/cluster.json", p.Dir() + "/nodesets", p.Dir() + "/workspaces"};
  ChangeWatch watch(probed);
  if (!watch.watching()) spdlog::warn("inotify unavailable: submissions are noticed within a second");
  auto next_supervise = Clock::now();
  bool settled = false;
  bool something_moved = false;
  while (!StopFlag()) {
    auto now = Clock::now();
    if (now >= next_supervise) {
      // A pod that became ready (or died) is reacted to at once, not at the next pass.
      auto supervised = rt->Supervise();
      if (supervised.changed) {
        schedule.PassNow();
        something_moved = true;
      }
      settled = supervised.settled;
      // Pods starting are watched closely; settled ones often, and only every second when idle.
      next_supervise = now + (!settled          ? std::chrono::milliseconds(20)
                              : schedule.idle() ? std::chrono::milliseconds(1000)
                                                : std::chrono::milliseconds(200));
    }
    const std::string stamp = ChangeStamp(probed);
    if (schedule.Due(Clock::now(), stamp)) {
      const bool was_idle = schedule.idle();
      if (was_idle && schedule.Moved(stamp)) spdlog::info("woken by a change (a submission or a spec)");
      // A pass for something that just moved reads the queue afresh, never a reused listing.
      if (something_moved || schedule.Moved(stamp)) (*controllers)->listing.Invalidate();
      something_moved = false;
      const auto pass_start = Clock::now();
      PassOutcome outcome = ReconcileOnce(store, **controllers, &metrics);
      metrics.ObservePass(std::chrono::duration<double>(Clock::now() - pass_start).count());
      schedule.Done(Clock::now(), outcome, stamp);
      if (!was_idle && schedule.idle()) {
        spdlog::info("cluster {} is idle: Slurm is asked again on a submission or a spec change, at the latest in {}s",
                     p.name, std::chrono::duration_cast<std::chrono::seconds>(schedule.options().idle).count());
      }
    }
    // Sleep until the next supervision or pass falls due, woken at once by a change to a probed
    // file (a submission, a spec): an idle cluster costs no ticks, and a submission starts a pass
    // in the time it takes inotify to deliver. Pods starting are watched every 20 ms.
    const auto wake = std::min(next_supervise, schedule.NextCheck(stamp));
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(wake - Clock::now());
    wait = std::clamp(wait, std::chrono::milliseconds(0),
                      settled ? std::chrono::milliseconds(1000) : std::chrono::milliseconds(20));
    if (wait.count() > 0) watch.Wait(wait);
  }
  metrics_endpoint.reset();
  control_plane.reset();
  spdlog::info("stopping: removing pods and network of cluster {}", p.name);
  Status s = rt->Teardown();
  if (!s.ok()) spdlog::error("teardown: {}", s.message());
  ::unlink(p.PidFile().c_str());
  spdlog::info("daemon stopped");
  return s.ok() ? 0 : 1;
}

}  // namespace hpc::app
