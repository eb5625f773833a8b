#include "operator/daemon.h"

#include "operator/daemon_metrics.h"
#include "operator/metrics_endpoint.h"

#include <pwd.h>
#include <sys/stat.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <nlohmann/json.hpp>

#include <spdlog/spdlog.h>

#include "common/files.h"
#include "common/jwt.h"
#include "common/log.h"
#include "operator/cluster_reconciler.h"
#include "operator/conditions.h"
#include "operator/job_listing.h"
#include "slurm/squeue_jobs.h"
#include "operator/node_snapshot.h"
#include "operator/nodeset_reconciler.h"
#include "operator/store.h"
#include "operator/accounting_sync.h"
#include "operator/ownership.h"
#include "operator/partition_sync.h"
#include "operator/pass_schedule.h"
#include "slurm/config.h"
#include "operator/workspace.h"
#include "operator/workspace_reconciler.h"
#include "platform/catalog.h"
#include "controlplane/agent.h"
#include "controlplane/server.h"
#include "controlplane/store.h"
#include "slurm/rest_client.h"
#include "slurm/slurm_control.h"

namespace hpc::op {
namespace {

std::atomic<bool> g_stop{false};
void OnStop(int) { g_stop = true; }

Result<Account> LookupAccount(const char* name) {
  struct passwd* pw = ::getpwnam(name);
  if (!pw) return Status::Errorf("system user \"{}\" does not exist (is its package installed?)", name);
  return Account{pw->pw_uid, pw->pw_gid};
}

// A JWT for SlurmUser, renewed well before it expires.
class TokenSource {
 public:
  explicit TokenSource(runtime::PodRuntime* rt) : rt_(rt) {}
  std::string Get() {
    int64_t now = jwt::UnixNow();
    if (token_.empty() || expires_ - now < 600) {
      auto secret = rt_->GetSecret(kSecretJwt);
      if (!secret.ok() || !*secret) return "";
      const std::string& key = (*secret)->data.at("jwt_hs256.key");
      expires_ = now + 3600;
      token_ = jwt::Sign({"slurm", now, expires_}, key);
    }
    return token_;
  }

 private:
  runtime::PodRuntime* rt_;
  std::string token_;
  int64_t expires_ = 0;
};

}  // namespace

pid_t RunningDaemon(const ClusterPaths& p) {
  auto text = files::Read(p.PidFile());
  if (!text.ok()) return 0;
  pid_t pid = 0;
  uint64_t start = 0;
  if (std::sscanf(text->c_str(), "%d %lu", &pid, &start) != 2) return 0;
  return runtime::local::ProcessStartTime(pid) == start && start != 0 ? pid : 0;
}

Result<std::unique_ptr<runtime::local::LocalRuntime>> OpenLocalRuntime(const ClusterPaths& p,
                                                                        const std::string& subnet,
                                                                        const std::string& self_exe, bool supervise) {
  runtime::local::LocalRuntime::Options o;
  o.dir = p.RuntimeDir();
  o.cluster_key = p.NetworkKey();
  o.subnet = subnet;
  o.self_exe = self_exe;
  o.supervise = supervise;
  return runtime::local::LocalRuntime::Create(o);
}

Result<BuildInputs> HostBuildInputs() {
  BuildInputs in;
  ASSIGN_OR_RETURN(in.slurm, LookupAccount("slurm"));
  ASSIGN_OR_RETURN(in.munge, LookupAccount("munge"));
  ASSIGN_OR_RETURN(in.nobody, LookupAccount("nobody"));
  // Only clusters with accounting need MariaDB; the reconciler says so when it is missing.
  in.mysql = LookupAccount("mysql").value_or(Account{-1, -1});
  ASSIGN_OR_RETURN(in.host_passwd, files::Read("/etc/passwd"));
  ASSIGN_OR_RETURN(in.host_group, files::Read("/etc/group"));
  return in;
}

namespace {

// Associations slurmdbd should hold: cluster users in account "default", workspace users in
// their project's account.
std::vector<Association> WantedAssociations(const api::SlurmCluster& c, const std::vector<api::Workspace>& ws) {
  std::vector<Association> out;
  for (const auto& u : c.spec.users) out.push_back({u.name, "default", u.admin});
  for (const auto& w : ws) out.push_back({w.spec.user.name, w.spec.project, w.spec.user.admin});
  return out;
}

// The change probe's stamp (pass_schedule.h): modification times of slurmctld's submit marker
// and of the specs the CLI and the agent write. A few stat(2) calls, no process, no request.
std::string ChangeStamp(const std::vector<std::string>& paths) {
  std::string out;
  for (const auto& path : paths) {
    struct stat st {};
    out += ::stat(path.c_str(), &st) == 0 ? fmt::format("{}.{};", st.st_mtim.tv_sec, st.st_mtim.tv_nsec) : "-;";
  }
  return out;
}

// One pass over the cluster, its workspaces and nodesets: whether everything converged, whether
// the cluster is idle, and when the next time-based duty (a token's renewal) falls due.
PassOutcome ReconcileOnce(const Store& store, runtime::PodRuntime& rt, ClusterReconciler& cluster_rec,
                   NodeSetReconciler& nodeset_rec, WorkspaceReconciler& workspace_rec, AccountingSync& accounting,
                   OwnershipLedger* ledger, JobListing* listing, DaemonMetrics* metrics) {
  PassOutcome outcome;
  auto c = store.LoadCluster();
  auto stored = store.LoadNodeSets();
  auto workspaces = store.LoadWorkspaces();
  if (!c.ok() || !stored.ok() || !workspaces.ok()) {
    spdlog::error("store: {}", !c.ok() ? c.status().message()
                               : !stored.ok() ? stored.status().message() : workspaces.status().message());
    return outcome;
  }
  // slurm.conf sees every workspace's partition (draining ones included).
  std::vector<api::NodeSet> config_nodesets = *stored;
  for (const auto& w : *workspaces) {
    // A released workspace (stopping, workers gone) no longer has a partition in Slurm's config.
    if (!(w.spec.stopping && w.status.released)) config_nodesets.push_back(WorkspaceNodeSet(w, false));
  }
  api::SlurmClusterStatus cst = cluster_rec.Reconcile(*c, config_nodesets, WorkspaceUsers(*workspaces),
                                                       WorkspaceDatasetGroups(*workspaces));
  (void)store.SaveClusterStatus(cst);
  const auto* ready = FindCondition(cst.conditions, "Ready");
  bool converged = ready && ready->status == "True";

  // One node and one job listing per pass, shared by every nodeset and workspace; nodes first
  // (node_snapshot.h says why).
  std::optional<NodeSnapshot> snapshot;
  if (cluster_rec.reader()) snapshot.emplace(cluster_rec.reader());
  slurm::SlurmReader* reader = snapshot ? &*snapshot : nullptr;
  const std::vector<slurm::SlurmJob>* jobs = listing->Get(cluster_rec.reader() != nullptr, [&] {
    return slurm::SqueueJobs(&rt, ControllerPodName(*c));
  });
  std::optional<std::vector<slurm::SlurmNode>> nodes;
  std::optional<PendingByPartition> pending;
  if (jobs) pending = GroupPending(*jobs);
  outcome.idle = jobs != nullptr && std::none_of(jobs->begin(), jobs->end(), [](const auto& j) { return !j.Finished(); });
  std::optional<std::vector<std::string>> partitions;
  if (reader && !workspaces->empty()) {
    auto n = reader->Nodes();
    if (n.ok()) nodes = std::move(*n);
  }
  if (reader && cluster_rec.controller_ready()) {
    // Users changes are remembered until applied: AllowGroups must see a new user.
    bool users_changed = cluster_rec.TakeUsersChanged();
    if (Status s = SyncPartitions(config_nodesets, reader, cluster_rec.control(), users_changed, ledger);
        !s.ok()) {
      spdlog::warn("partitions: {}", s.message());
      if (users_changed) cluster_rec.MarkUsersChanged();
    }
    // Read after the sync: a released workspace's partition is gone from here once deleted.
    bool any_released = std::any_of(workspaces->begin(), workspaces->end(),
                                    [](const api::Workspace& w) { return w.spec.stopping && w.status.released; });
    if (any_released) {
      if (auto parts = reader->Partitions(); parts.ok()) {
        partitions.emplace();
        for (const auto& p : *parts) partitions->push_back(p.name);
      }
    }
  }
  if (c->spec.accounting.enabled && cluster_rec.slurmdbd_ready() && cluster_rec.controller_ready()) {
    if (Status s = accounting.Sync(c->metadata.name, WantedAssociations(*c, *workspaces), ledger); !s.ok()) {
      spdlog::warn("accounting: {}", s.message());
    }
  }

  // Nodesets: stored ones, then the workspaces' (pinned to zero once a stopping one has no jobs).
  std::vector<api::NodeSet> nodesets = *stored;
  for (const auto& w : *workspaces) {
    auto active = ActiveJobs(jobs, w.metadata.name);
    api::NodeSet ns = WorkspaceNodeSet(w, active && *active == 0);
    ns.status = store.LoadNodeSetStatus(ns.metadata.name);
    nodesets.push_back(std::move(ns));
  }
  std::set<std::string> known;
  std::map<std::string, api::NodeSetStatus> statuses;
  int nodeset_errors = 0;
  outcome.any_autoscaled = false;
  for (const auto& ns : nodesets) {
    known.insert(ns.metadata.name);
    outcome.any_autoscaled = outcome.any_autoscaled || IsAutoscaled(ns);
    if (!cluster_rec.controller_ready()) continue;
    api::NodeSetStatus nst = nodeset_rec.Reconcile(*c, ns, reader, pending ? &*pending : nullptr);
    nodeset_errors += nodeset_rec.last_errors();
    (void)store.SaveNodeSetStatus(ns.metadata.name, nst);
    statuses[ns.metadata.name] = nst;
    if (nst.replicas != nst.desired || nst.ready != nst.desired) converged = false;
    // Workers' health reports arrive through Slurm's node list, which an idle cluster does not
    // read: while there are workers, read it at least every health check interval.
    if (c->spec.health_checks.enabled && nst.replicas > 0) {
      std::chrono::seconds every(c->spec.health_checks.interval_seconds);
      outcome.duty_in = outcome.duty_in ? std::min(*outcome.duty_in, every) : every;
    }
  }

  if (cluster_rec.controller_ready()) {
    for (const auto& w : *workspaces) {
      WorkspaceView view;
      view.jobs = jobs;
      view.nodes = nodes ? &*nodes : nullptr;
      view.nodeset = statuses.count(w.metadata.name) ? &statuses[w.metadata.name] : nullptr;
      view.accounting_ready = !c->spec.accounting.enabled || accounting.Synced(w.spec.user.name);
      view.partitions = partitions ? &*partitions : nullptr;
      WorkspaceOutcome out = workspace_rec.Reconcile(*c, w, view);
      if (out.remove) {
        spdlog::info("workspace {} stopped and removed", w.metadata.name);
        (void)store.DeleteWorkspace(w.metadata.name);
        known.erase(w.metadata.name);
        continue;
      }
      (void)store.SaveWorkspaceStatus(w.metadata.name, out.status);
      if (out.status.phase != "Ready") converged = false;
      if (out.status.token_expires > 0) {
        std::chrono::seconds renew_in(std::max<int64_t>(0, TokenRenewAt(w, out.status) - jwt::UnixNow()));
        outcome.duty_in = outcome.duty_in ? std::min(*outcome.duty_in, renew_in) : renew_in;
      }
    }
  }

  // Workers of nodesets that were deleted from the store.
  auto pods = rt.ListPods({{kLabelComponent, "worker"}});
  if (pods.ok() && cluster_rec.controller_ready()) {
    std::set<std::string> orphaned;
    for (const auto& pod : *pods) {
      auto it = pod.labels.find(kLabelNodeSet);
      if (it != pod.labels.end() && !known.count(it->second)) orphaned.insert(it->second);
    }
    for (const auto& name : orphaned) {
      api::NodeSet gone;
      gone.metadata.name = name;
      (void)nodeset_rec.RemoveNodeSet(*c, gone, cluster_rec.reader());
    }
  }
  if (metrics) {
    std::vector<DaemonMetrics::NodeSetView> views;
    std::set<std::string> workspace_partitions;
    for (const auto& w : *workspaces) workspace_partitions.insert(w.metadata.name);
    for (const auto& ns : nodesets) {
      auto it = statuses.find(ns.metadata.name);
      if (it != statuses.end()) views.push_back({ns.metadata.name, workspace_partitions.count(ns.metadata.name) > 0, &it->second});
    }
    metrics->ObserveNodeSets(views, jobs, workspace_partitions);
    metrics->ObserveReconcileErrors("cluster", cluster_rec.last_errors());
    metrics->ObserveReconcileErrors("nodeset", nodeset_errors);
    if (auto all = rt.ListPods(); all.ok()) metrics->ObservePods(*all);
  }
  outcome.converged = converged;
  return outcome;
}

// Workspaces stored before project datasets had groups get theirs from the catalog, once.
void GiveDatasetsTheirGroups(const Store& store, const platform::Catalog& catalog) {
  auto workspaces = store.LoadWorkspaces();
  if (!workspaces.ok()) return;
  for (auto w : *workspaces) {
    bool changed = false;
    for (const auto& d : w.spec.datasets) {
      if (w.spec.dataset_gids.count(d)) continue;
      auto gid = catalog.DatasetGid(d);
      if (!gid.ok()) {
        spdlog::error("workspace {}: dataset {}: {}", w.metadata.name, d, gid.status().message());
        continue;
      }
      w.spec.dataset_gids[d] = *gid;
      changed = true;
    }
    if (changed && store.SaveWorkspace(w).ok()) spdlog::info("workspace {}: datasets now belong to their project groups", w.metadata.name);
  }
}

}  // namespace

namespace {

// Opens the control plane's store under the state dir, makes sure an admin token and this
// data plane's agent token exist (files, 0600), and starts the API and the agent on threads.
Status StartControlPlane(const ClusterPaths& p, const std::string& self_exe, const std::string& config,
                         std::unique_ptr<cp::Store>* store, std::unique_ptr<cp::Server>* server,
                         std::thread* server_thread, std::thread* agent_thread) {
  auto cfg = nlohmann::json::parse(config, nullptr, false);
  std::string listen = cfg.is_object() && cfg["listen"].is_string() ? cfg["listen"].get<std::string>() : "";
  auto listen_at = cp::ParseListenAddress(listen);
  if (!listen_at.ok()) return Status::Errorf("controlplane.json: {}", listen_at.status().message());
  const std::string dir = p.state_dir + "/controlplane";
  RETURN_IF_ERROR(files::MakeDirs(dir, 0700));
  ASSIGN_OR_RETURN(*store, cp::OpenStore("sqlite:" + dir + "/hpcplane.db"));
  for (const auto& [file, subject, role] : {std::tuple<std::string, std::string, cp::Role>{dir + "/admin.token", "admin", cp::Role::kAdmin},
                                            {p.Dir() + "/agent.token", p.name, cp::Role::kAgent}}) {
    if (files::Exists(file)) continue;
    ASSIGN_OR_RETURN(std::string token, cp::BootstrapToken(store->get(), subject, role));
    RETURN_IF_ERROR(files::WriteAtomic(file, token + "\n", 0600));
  }
  cp::ServerOptions o = *listen_at;
  *server = std::make_unique<cp::Server>(store->get(), o);
  ASSIGN_OR_RETURN(int port, (*server)->Bind());
  spdlog::info("control plane API on http://{}:{}/api/v1", o.host, port);
  cp::Server* srv = server->get();
  *server_thread = std::thread([srv] { srv->Serve(); });
  cp::AgentOptions a;
  a.server = fmt::format("http://{}:{}", o.host == "0.0.0.0" ? "127.0.0.1" : o.host, port);
  ASSIGN_OR_RETURN(a.token, files::Read(p.Dir() + "/agent.token"));
  while (!a.token.empty() && a.token.back() == '\n') a.token.pop_back();
  *agent_thread = std::thread([p, self_exe, a] {
    cp::Agent agent(p, self_exe, a);
    agent.Run(g_stop);
  });
  return Status::Ok();
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
  auto rt_or = OpenLocalRuntime(p, cluster->spec.subnet, self_exe, true);
  if (!rt_or.ok()) {
    spdlog::error("{}", rt_or.status().message());
    return 1;
  }
  auto rt = std::move(rt_or).value();
  if (RunningDaemon(p) != 0) {
    spdlog::error("another daemon already runs for cluster {}", p.name);
    return 1;
  }
  // Status left by an earlier daemon may describe pods that are gone; it is computed afresh
  // (before the pid file appears, so `up` never waits on stale status).
  (void)files::RemoveAll(p.Dir() + "/status");
  {
    std::string pid_line = fmt::format("{} {}\n", ::getpid(), runtime::local::ProcessStartTime(::getpid()));
    Status s = files::WriteAtomic(p.PidFile(), pid_line);
    if (!s.ok()) {
      spdlog::error("{}", s.message());
      return 1;
    }
  }
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  spdlog::info("daemon for cluster {} started (pid {})", p.name, ::getpid());

  TokenSource tokens(rt.get());
  slurm::ScontrolInPod control(rt.get(), ControllerPodName(*cluster));
  ClusterReconciler cluster_rec(
      rt.get(), *inputs,
      [&tokens](const std::string& host, int port) {
        return std::make_unique<slurm::RestClient>(host, port, "slurm", [&tokens] { return tokens.Get(); });
      },
      &control);
  NodeSetReconciler nodeset_rec(rt.get(), *inputs, &control);
  WorkspaceReconciler workspace_rec(rt.get(), *inputs, &control);
  AccountingSync accounting(rt.get(), ControllerPodName(*cluster));
  GiveDatasetsTheirGroups(store, platform::Catalog(p.state_dir));
  auto ledger = OwnershipLedger::Open(p.Dir() + "/owned.json");
  if (!ledger.ok()) {
    spdlog::error("{}", ledger.status().message());
    return 1;
  }

  // With `up --control-plane`, the control plane's API and this data plane's agent run here too.
  std::unique_ptr<cp::Store> cp_store;
  std::unique_ptr<cp::Server> cp_server;
  std::thread cp_server_thread, cp_agent_thread;
  if (auto cfg = files::Read(p.Dir() + "/controlplane.json"); cfg.ok()) {
    Status s = StartControlPlane(p, self_exe, *cfg, &cp_store, &cp_server, &cp_server_thread, &cp_agent_thread);
    if (!s.ok()) spdlog::error("control plane: {}", s.message());
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
  const std::vector<std::string> probed = {
      rt->VolumePath(kVolumeControllerState) + "/" + slurm::kSubmitMarkerFile, p.Dir() + "/cluster.json",
      p.Dir() + "/nodesets", p.Dir() + "/workspaces"};
  auto next_supervise = Clock::now();
  bool settled = false;
  bool something_moved = false;
  JobListing listing;
  while (!g_stop) {
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
      next_supervise = now + (!settled ? std::chrono::milliseconds(20)
                              : schedule.idle() ? std::chrono::milliseconds(1000)
                                                : std::chrono::milliseconds(200));
    }
    const std::string stamp = ChangeStamp(probed);
    if (schedule.Due(Clock::now(), stamp)) {
      const bool was_idle = schedule.idle();
      if (was_idle && schedule.Moved(stamp)) spdlog::info("woken by a change (a submission or a spec)");
      // A pass for something that just moved reads the queue afresh, never a reused listing.
      if (something_moved || schedule.Moved(stamp)) listing.Invalidate();
      something_moved = false;
      const auto pass_start = Clock::now();
      PassOutcome outcome = ReconcileOnce(store, *rt, cluster_rec, nodeset_rec, workspace_rec, accounting, &*ledger,
                                          &listing, &metrics);
      metrics.ObservePass(std::chrono::duration<double>(Clock::now() - pass_start).count());
      schedule.Done(Clock::now(), outcome, stamp);
      if (!was_idle && schedule.idle()) {
        spdlog::info("cluster {} is idle: Slurm is asked again on a submission or a spec change, at the latest in {}s",
                     p.name, std::chrono::duration_cast<std::chrono::seconds>(schedule.options().idle).count());
      }
    }
    // The probe's tick: how soon a submission to an idle cluster starts a pass.
    std::this_thread::sleep_for(std::chrono::milliseconds(settled ? 50 : 20));
  }
  metrics_endpoint.reset();
  if (cp_server) cp_server->Stop();
  if (cp_server_thread.joinable()) cp_server_thread.join();
  if (cp_agent_thread.joinable()) cp_agent_thread.join();
  spdlog::info("stopping: removing pods and network of cluster {}", p.name);
  Status s = rt->Teardown();
  if (!s.ok()) spdlog::error("teardown: {}", s.message());
  ::unlink(p.PidFile().c_str());
  spdlog::info("daemon stopped");
  return s.ok() ? 0 : 1;
}

}  // namespace hpc::op
