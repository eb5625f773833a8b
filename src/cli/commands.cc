#include "cli/commands.h"
#include "cli/support.h"
#include "cli/workspace_commands.h"
#include "cli/controlplane_commands.h"
#include "cli/project_commands.h"
#include "cli/kubernetes_commands.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <set>
#include <thread>
#include <tuple>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "api/validation.h"
#include "app/runtime_factory.h"
#include "common/files.h"
#include "common/log.h"
#include "common/subprocess.h"
#include "embedded_cluster.h"
#include "controlplane/server.h"
#include "operator/builders.h"
#include "operator/conditions.h"
#include "operator/daemon.h"
#include "operator/store.h"

namespace hpc::cli {
namespace {

using nlohmann::json;

Status Preflight() {
  if (::geteuid() != 0) {
    return Status::Error("hpcplane needs root to create namespaces and networks (run it with sudo)");
  }
  for (const char* bin : {"slurmctld", "slurmd", "slurmrestd", "munged", "slurmdbd", "mariadbd", "ip", "nsenter", "setpriv"}) {
    auto r = RunProcess({"sh", "-c", std::string("command -v ") + bin});
    if (!r.ok() || r->exit_code != 0) {
      return Status::Errorf("{} is not installed (run `make deps` or scripts/install-deps.sh)", bin);
    }
  }
  return Status::Ok();
}

// Decodes a manifest and checks it as a whole: nodesets belong to the cluster given or stored.
Result<api::Manifest> LoadManifest(const std::string& file, const std::optional<api::SlurmCluster>& stored) {
  api::Manifest m;
  if (file.empty()) {
    ASSIGN_OR_RETURN(m, api::DecodeManifest(kEmbeddedClusterYaml, "embedded examples/cluster.yaml"));
  } else {
    ASSIGN_OR_RETURN(m, api::DecodeManifestFile(file));
  }
  if (m.clusters.size() > 1) return Status::Errorf("{}: one SlurmCluster per file", file);
  const api::SlurmCluster* cluster = !m.clusters.empty() ? &m.clusters[0] : stored ? &*stored : nullptr;
  std::set<std::string> seen;
  for (auto& ns : m.nodesets) {
    if (!cluster) return Status::Errorf("nodeset \"{}\": no SlurmCluster given or running", ns.metadata.name);
    if (ns.spec.cluster.empty()) ns.spec.cluster = cluster->metadata.name;
    if (ns.spec.cluster != cluster->metadata.name) {
      return Status::Errorf("nodeset \"{}\": spec.cluster: must be \"{}\" (got \"{}\")", ns.metadata.name,
                            cluster->metadata.name, ns.spec.cluster);
    }
    if (!seen.insert(ns.metadata.name).second) {
      return Status::Errorf("nodeset \"{}\": defined twice", ns.metadata.name);
    }
    RETURN_IF_ERROR(api::ValidateAgainstCluster(ns, *cluster));
  }
  return m;
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
  const std::vector<std::string> order = {"munge", "mariadb", "slurmdbd", "controller", "restapi", "login"};
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
          std::cout << fmt::format("  ✓ {:<22} {}/{} workers  {:6.2f}s", "nodeset " + ns.metadata.name,
                                   ns.status.ready, ns.status.desired, Seconds(start))
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

std::atomic<bool> g_interrupted{false};
void OnInterrupt(int) { g_interrupted = true; }

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

int CmdUp(const Globals& g_in, const std::string& file, bool detach, int timeout_s, const std::string& control_plane,
          const std::string& metrics_listen) {
  Globals g = g_in;
  auto start = Clock::now();
  // Listen addresses are checked before anything is created.
  for (const auto& [flag, value] : {std::pair<const char*, std::string>{"--control-plane", control_plane},
                                    {"--metrics-listen", metrics_listen}}) {
    if (value.empty()) continue;
    if (auto at = cp::ParseListenAddress(value); !at.ok()) return Fail(Status::Errorf("{}: {}", flag, at.status().message()));
  }
  if (Status s = Preflight(); !s.ok()) return Fail(s);
  // Without -f, `up` brings back the cluster the state dir holds (its stored specs, unchanged);
  // the embedded demo cluster only when the state dir holds none.
  std::optional<op::ClusterPaths> stored;
  if (file.empty()) {
    auto resolved = ResolveCluster(g);
    if (resolved.ok()) {
      stored = *resolved;
    } else if (!g.cluster.empty()) {
      return Fail(Status::Errorf("cluster \"{}\" not found in {} (`up -f FILE` creates a cluster)", g.cluster,
                                 g.state_dir));
    } else if (!ListStoredClusters(g.state_dir).empty()) {
      return Fail(resolved.status());
    }
  }
  api::Manifest m;
  if (stored) {
    auto c = op::Store(stored->Dir()).LoadCluster();
    if (!c.ok()) return Fail(c.status());
    m.clusters.push_back(*c);
  } else {
    auto loaded = LoadManifest(file, std::nullopt);
    if (!loaded.ok()) return Fail(loaded.status());
    m = std::move(*loaded);
  }
  if (m.clusters.empty()) return Fail(Status::Errorf("{}: `up` needs a SlurmCluster", file));
  const api::SlurmCluster& c = m.clusters[0];
  op::ClusterPaths p{g.state_dir, c.metadata.name};
  pid_t running = op::RunningDaemon(p);
  if (running == 0) {
    // A subnet held by another cluster's network is refused before anything is created.
    if (Status free = app::CheckSubnetFree(p, c.metadata.name, c.spec.subnet); !free.ok()) return Fail(free);
  }
  // The state dir holds keys, datasets and databases: root's alone (pods see only what they mount).
  // A state dir hpcplane creates is 0700 too; one that exists is left as its owner made it.
  const bool fresh_state_dir = !files::Exists(g.state_dir);
  if (Status s = files::MakeDirs(p.Dir(), 0700); !s.ok()) return Fail(s);
  for (const std::string& dir : {g.state_dir + "/clusters", p.Dir()}) ::chmod(dir.c_str(), 0700);
  if (fresh_state_dir) ::chmod(g.state_dir.c_str(), 0700);
  op::Store store(p.Dir());
  if (!stored) {
    if (Status s = store.SaveCluster(c); !s.ok()) return Fail(s);
    for (const auto& ns : m.nodesets) {
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
    std::cout << fmt::format("Control plane on http://{}/api/v1 (admin token in {}/controlplane/admin.token); this "
                             "cluster reports as data plane \"{}\". Web console: http://{}/",
                             control_plane, g.state_dir, c.metadata.name, control_plane)
              << std::endl;
  }
  if (detach) return 0;
  std::cout << "Running in the foreground; press Ctrl-C to bring it down (or use --detach)." << std::endl;
  ::signal(SIGINT, OnInterrupt);
  ::signal(SIGTERM, OnInterrupt);
  while (!g_interrupted && op::RunningDaemon(p) != 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  if (!g_interrupted) return Fail(Status::Errorf("the hpcplane daemon stopped; see {}", p.LogFile()));
  std::cout << "\nBringing cluster down..." << std::endl;
  if (Status s = StopCluster(g, p, false); !s.ok()) return Fail(s);
  return 0;
}

int CmdDown(const Globals& g, bool purge) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  if (Status s = StopCluster(g, *p, purge); !s.ok()) return Fail(s);
  std::cout << fmt::format("Cluster \"{}\" is down{}.", p->name, purge ? " and its state removed" : "") << std::endl;
  return 0;
}

std::string Age(int64_t started_at) {
  if (started_at == 0) return "-";
  int64_t s = std::time(nullptr) - started_at;
  if (s < 120) return fmt::format("{}s", s);
  if (s < 7200) return fmt::format("{}m", s / 60);
  return fmt::format("{}h", s / 3600);
}

std::string ConditionSummary(const std::vector<api::Condition>& cs) {
  std::string out;
  for (const auto& c : cs) {
    if (c.status == "True") out += (out.empty() ? "" : ",") + c.type;
  }
  return out.empty() ? "-" : out;
}

void PrintConditions(const std::vector<api::Condition>& cs) {
  std::cout << "Conditions:\n";
  for (const auto& c : cs) {
    std::cout << fmt::format("  {:<14} {:<6} {:<20} {}\n", c.type, c.status, c.reason, c.message);
  }
}

json ResourceListJson(const runtime::ResourceList& r) {
  json j = json::object();
  if (r.cpus > 0) j["cpus"] = r.cpus;
  if (r.memory_mib > 0) j["memoryMiB"] = r.memory_mib;
  if (r.gpus > 0) j["gpus"] = r.gpus;
  return j;
}

json PodJson(const runtime::PodStatus& p) {
  json j = {{"name", p.name},       {"phase", runtime::PodPhaseName(p.phase)},
            {"ready", p.ready},     {"ip", p.ip},
            {"restarts", p.restarts}, {"startedAt", p.started_at},
            {"labels", p.labels},   {"message", p.message}};
  if (!p.resources.requests.empty() || !p.resources.limits.empty()) {
    j["resources"] = {{"requests", ResourceListJson(p.resources.requests)},
                      {"limits", ResourceListJson(p.resources.limits)}};
    // Said plainly, so nobody reads a limit as a guarantee this host does not give.
    if (!p.not_enforced.empty()) j["resources"]["notEnforced"] = p.not_enforced;
  }
  return j;
}

int Output(const json& j, const std::string& format) {
  if (format == "json") std::cout << j.dump(2) << "\n";
  else std::cout << api::JsonToYaml(j);
  return 0;
}

int CmdGet(const Globals& g, const std::string& what, const std::string& format) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  if (what == "clusters" || what == "cluster") {
    auto c = store.LoadCluster();
    if (!c.ok()) return Fail(c.status());
    if (format != "table") return Output(json::array({api::ToJson(*c)}), format);
    std::cout << fmt::format("{:<16} {:<18} {:<10} {}\n", "NAME", "SUBNET", "DAEMON", "CONDITIONS");
    std::cout << fmt::format("{:<16} {:<18} {:<10} {}\n", c->metadata.name, c->spec.subnet,
                             op::RunningDaemon(*p) ? "running" : "stopped", ConditionSummary(c->status.conditions));
    return 0;
  }
  if (what == "nodesets" || what == "nodeset") {
    auto nss = store.LoadAllNodeSets();
    if (!nss.ok()) return Fail(nss.status());
    if (format != "table") {
      json arr = json::array();
      for (const auto& n : *nss) arr.push_back(api::ToJson(n));
      return Output(arr, format);
    }
    std::cout << fmt::format("{:<14} {:<12} {:<6} {:>7} {:>7} {:>5} {:>4} {:>4} {:>8} {:>9} {:>9}  {}\n", "NAME",
                             "PARTITION", "MODE", "DESIRED", "CURRENT", "READY", "BUSY", "IDLE", "DRAINING", "UNHEALTHY",
                             "MIN/MAX", "LAST DECISION");
    auto c = store.LoadCluster();
    const int cluster_min = c.ok() ? c->spec.min_replica_count : 0;
    for (const auto& n : *nss) {
      int min = n.MinReplicas(cluster_min);
      std::cout << fmt::format("{:<14} {:<12} {:<6} {:>7} {:>7} {:>5} {:>4} {:>4} {:>8} {:>9} {:>9}  {}\n",
                               n.metadata.name, n.PartitionName(), n.spec.replicas ? "manual" : "auto", n.status.desired,
                               n.status.replicas, n.status.ready, n.status.busy, n.status.idle, n.status.draining,
                               n.status.unhealthy, fmt::format("{}/{}", min, n.spec.max_replicas),
                               n.status.last_decision.empty() ? "-" : n.status.last_decision);
    }
    return 0;
  }
  if (what == "pods" || what == "pod") {
    auto rt = ClientRuntime(g, *p);
    if (!rt.ok()) return Fail(rt.status());
    auto pods = (*rt)->ListPods({});
    if (!pods.ok()) return Fail(pods.status());
    if (format != "table") {
      json arr = json::array();
      for (const auto& pod : *pods) arr.push_back(PodJson(pod));
      return Output(arr, format);
    }
    std::cout << fmt::format("{:<24} {:<11} {:<9} {:<6} {:<15} {:>8} {:>5}\n", "NAME", "COMPONENT", "PHASE", "READY",
                             "IP", "RESTARTS", "AGE");
    for (const auto& pod : *pods) {
      std::string comp = pod.labels.count(op::kLabelComponent) ? pod.labels.at(op::kLabelComponent) : "-";
      std::cout << fmt::format("{:<24} {:<11} {:<9} {:<6} {:<15} {:>8} {:>5}\n", pod.name, comp,
                               runtime::PodPhaseName(pod.phase), pod.ready ? "yes" : "no", pod.ip, pod.restarts,
                               Age(pod.started_at));
    }
    return 0;
  }
  return Fail(Status::Errorf("get: unknown resource \"{}\" (clusters, nodesets or pods)", what));
}

int CmdStatus(const Globals& g) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  auto c = store.LoadCluster();
  if (!c.ok()) return Fail(c.status());
  const auto* ready = op::FindCondition(c->status.conditions, "Ready");
  bool daemon = op::RunningDaemon(*p) != 0;
  std::cout << fmt::format("Cluster {}: {}{}\n", c->metadata.name,
                           ready && ready->status == "True" ? "Ready" : "Not ready",
                           daemon ? "" : " (daemon not running: run `hpcplane up`)");
  std::cout << "Components:\n";
  for (const auto& [k, v] : c->status.components) std::cout << fmt::format("  {:<12} {}\n", k, v);
  std::cout << "Endpoints:\n";
  for (const auto& [k, v] : c->status.endpoints) std::cout << fmt::format("  {:<12} {}\n", k, v);
  std::cout << "Versions:\n";
  for (const auto& [k, v] : c->status.component_versions) std::cout << fmt::format("  {:<18} {}\n", k, v);
  PrintConditions(c->status.conditions);
  std::cout << "\n";
  CmdGet(g, "nodesets", "table");
  std::cout << "\n";
  return CmdGet(g, "pods", "table");
}

int CmdDescribe(const Globals& g, const std::string& kind, const std::string& name) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  if (kind == "cluster") {
    auto c = store.LoadCluster();
    if (!c.ok()) return Fail(c.status());
    std::cout << api::JsonToYaml(api::ToJson(*c));
    return 0;
  }
  if (kind == "nodeset") {
    std::optional<api::NodeSet> n;
    if (auto all = store.LoadAllNodeSets(); all.ok()) {
      for (auto& x : *all) {
        if (x.metadata.name == name) n = x;
      }
    }
    if (!n) return Fail(Status::Errorf("nodeset \"{}\" not found in cluster {}", name, p->name));
    json j = api::ToJson(*n);
    j["status"].erase("events");
    std::cout << api::JsonToYaml(j);
    std::cout << "Events (newest last):\n";
    if (n->status.events.empty()) std::cout << "  <none>\n";
    for (const auto& e : n->status.events) {
      std::cout << fmt::format("  {}  {:<7} {:<14} {}\n", e.time, e.type, e.reason, e.message);
    }
    return 0;
  }
  if (kind == "pod") {
    auto rt = ClientRuntime(g, *p);
    if (!rt.ok()) return Fail(rt.status());
    auto pods = (*rt)->ListPods({});
    if (!pods.ok()) return Fail(pods.status());
    for (const auto& pod : *pods) {
      if (pod.name == name) {
        std::cout << api::JsonToYaml(PodJson(pod));
        auto logs = (*rt)->Logs(name, 10);
        if (logs.ok()) std::cout << "Recent log:\n" << *logs;
        return 0;
      }
    }
    return Fail(Status::Errorf("pod \"{}\" not found in cluster {}", name, p->name));
  }
  return Fail(Status::Errorf("describe: unknown kind \"{}\" (cluster, nodeset or pod)", kind));
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
      return Fail(Status::Errorf("cluster \"{}\": spec.network.subnet cannot change while the cluster exists "
                                 "(got {}, running on {})", name, m->clusters[0].spec.subnet, old->spec.subnet));
    }
    if (Status s = store.SaveCluster(m->clusters[0]); !s.ok()) return Fail(s);
    std::cout << fmt::format("cluster/{} applied\n", name);
  }
  for (const auto& ns : m->nodesets) {
    if (Status s = store.SaveNodeSet(ns); !s.ok()) return Fail(s);
    std::cout << fmt::format("nodeset/{} applied\n", ns.metadata.name);
  }
  return 0;
}

int CmdDelete(const Globals& g, const std::string& kind, const std::string& name) {
  if (kind != "nodeset") return Fail(Status::Errorf("delete: unknown kind \"{}\" (nodeset)", kind));
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  if (store.HasWorkspace(name)) {
    return Fail(Status::Errorf("nodeset \"{}\" belongs to workspace {}: use `hpcplane workspace stop {}`", name, name, name));
  }
  if (!store.LoadNodeSet(name).ok()) return Fail(Status::Errorf("nodeset \"{}\" not found", name));
  if (Status s = store.DeleteNodeSet(name); !s.ok()) return Fail(s);
  std::cout << fmt::format("nodeset/{} deleted; its workers are drained and removed as their jobs end\n", name);
  return 0;
}

int CmdScale(const Globals& g, const std::string& kind, const std::string& name, std::optional<int> replicas,
             bool wait, int timeout_s) {
  if (kind != "nodeset") return Fail(Status::Errorf("scale: unknown kind \"{}\" (nodeset)", kind));
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  op::Store store(p->Dir());
  auto c = store.LoadCluster();
  if (!c.ok()) return Fail(c.status());
  if (store.HasWorkspace(name)) {
    return Fail(Status::Errorf("nodeset \"{}\" belongs to workspace {} and is autoscaled up to its --max-workers", name, name));
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
    std::cout << fmt::format("nodeset/{}: {} is outside minReplicas..maxReplicas ({}..{}); using {}\n", name,
                             *replicas, min, n->spec.max_replicas, clamped);
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

int CmdExec(const Globals& g, const std::string& pod, const std::string& user, const std::vector<std::string>& cmd) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  if (user != "root") {
    if (Status s = api::ValidateUserName(user); !s.ok() && user != "slurm") return Fail(s);
  }
  auto rt = ClientRuntime(g, *p);
  if (!rt.ok()) return Fail(rt.status());
  runtime::ExecOptions o;
  o.user = user;
  o.argv = cmd.empty() ? std::vector<std::string>{"/bin/bash", "-l"} : cmd;
  if (const char* term = std::getenv("TERM")) o.env["TERM"] = term;
  auto rc = (*rt)->ExecInteractive(pod, o);
  if (!rc.ok()) return Fail(rc.status());
  return *rc;
}

int CmdLogs(const Globals& g, const std::string& pod, int tail) {
  auto p = ResolveCluster(g);
  if (!p.ok()) return Fail(p.status());
  auto rt = ClientRuntime(g, *p);
  if (!rt.ok()) return Fail(rt.status());
  auto logs = (*rt)->Logs(pod, tail < 0 ? 0 : static_cast<size_t>(tail));
  if (!logs.ok()) return Fail(logs.status());
  std::cout << *logs;
  return 0;
}

}  // namespace

int Main(int argc, char** argv, const std::string& self_exe) {
  Globals g;
  g.self_exe = self_exe;
  if (const char* s = std::getenv("HPCPLANE_STATE_DIR")) g.state_dir = s;
  if (const char* c = std::getenv("HPCPLANE_CLUSTER")) g.cluster = c;

  CLI::App app{"hpcplane: real Slurm as a service, on local pods or Kubernetes"};
  app.set_version_flag("--version", HPCPLANE_VERSION);
  app.require_subcommand(1);
  app.option_defaults()->always_capture_default();
  app.add_option("--state-dir", g.state_dir, "Where clusters keep their state (env HPCPLANE_STATE_DIR)");
  app.add_option("--cluster", g.cluster, "Cluster to act on when the state dir holds several (env HPCPLANE_CLUSTER)");
  app.add_flag("-v,--verbose", g.verbose, "Log what hpcplane does");

  std::string file;
  bool detach = false;
  int timeout_s = 120;
  auto* up = app.add_subcommand("up", "Bring up a cluster and wait until Ready (without -f: the state dir's cluster, or the embedded demo "
      "cluster when it holds none)");
  up->add_option("-f,--file", file, "SlurmCluster and NodeSet manifest (YAML or JSON)")->check(CLI::ExistingFile);
  up->add_flag("--detach", detach, "Return once Ready, leaving the cluster running");
  up->add_option("--timeout", timeout_s, "Seconds to wait for Ready");
  std::string control_plane;
  up->add_option("--control-plane", control_plane,
                 "HOST:PORT: also run the control plane's API and this data plane's agent, in the same process");
  std::string metrics_listen;
  up->add_option("--metrics-listen", metrics_listen,
                 "HOST:PORT (e.g. 127.0.0.1:9464): serve Prometheus metrics there, for the bearer token in "
                 "<state>/clusters/<name>/metrics.token");

  bool purge = false;
  auto* down = app.add_subcommand("down", "Stop every pod and remove the cluster's network (--purge: also its state)");
  down->add_flag("--purge", purge, "Also delete keys, Slurm state and volumes");

  auto* status = app.add_subcommand("status", "Show the cluster's components, nodesets and pods");

  std::string what, format = "table";
  auto* get = app.add_subcommand("get", "List clusters, nodesets or pods");
  get->add_option("resource", what, "clusters | nodesets | pods")->required();
  get->add_option("-o,--output", format, "table | yaml | json")->check(CLI::IsMember({"table", "yaml", "json"}));

  std::string kind, name;
  auto* describe = app.add_subcommand("describe", "Show one cluster, nodeset or pod in full");
  describe->add_option("kind", kind, "cluster | nodeset | pod")->required();
  describe->add_option("name", name, "Its name");

  auto* apply = app.add_subcommand("apply", "Create or update resources of a running cluster");
  apply->add_option("-f,--file", file, "Manifest (YAML or JSON)")->required()->check(CLI::ExistingFile);

  auto* del = app.add_subcommand("delete", "Delete a nodeset (its workers drain first)");
  del->add_option("kind", kind, "nodeset")->required();
  del->add_option("name", name, "Its name")->required();

  std::optional<int> replicas;
  bool wait = false, autoscale = false;
  auto* scale = app.add_subcommand("scale", "Pin a nodeset's worker count (clamped to min..max), or --auto");
  scale->add_option("kind", kind, "nodeset")->required();
  scale->add_option("name", name, "Nodeset name")->required();
  auto* replicas_opt = scale->add_option("--replicas", replicas, "Workers wanted");
  auto* auto_opt = scale->add_flag("--auto", autoscale, "Let the autoscaler size it from pending jobs again");
  replicas_opt->excludes(auto_opt);
  scale->add_flag("--wait", wait, "Wait until the nodeset has exactly that many ready workers");
  scale->add_option("--timeout", timeout_s, "Seconds to wait with --wait");

  std::string pod, user = "root";
  std::vector<std::string> cmd;
  auto* exec = app.add_subcommand("exec", "Run a command in a pod as a user: hpcplane exec POD [--user U] -- CMD...");
  exec->add_option("pod", pod, "Pod name (see `hpcplane get pods`)")->required();
  exec->add_option("-u,--user", user, "User to run as");
  exec->add_option("command", cmd, "Command and arguments (default: a login shell)");

  int tail = 0;
  auto* logs = app.add_subcommand("logs", "Print a pod's output");
  logs->add_option("pod", pod, "Pod name")->required();
  logs->add_option("--tail", tail, "Only the last N lines");

  auto run_workspace_commands = AddWorkspaceCommands(app, g);
  auto run_controlplane_commands = AddControlPlaneCommands(app, g);
  auto run_project_commands = AddProjectCommands(app);
  auto run_kubernetes_commands = AddKubernetesCommands(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  log::InitConsole(g.verbose);
  if (up->parsed()) return CmdUp(g, file, detach, timeout_s, control_plane, metrics_listen);
  if (down->parsed()) return CmdDown(g, purge);
  if (status->parsed()) return CmdStatus(g);
  if (get->parsed()) return CmdGet(g, what, format);
  if (describe->parsed()) {
    if (kind != "cluster" && name.empty()) return Fail(Status::Errorf("describe {}: a name is required", kind));
    return CmdDescribe(g, kind, name);
  }
  if (apply->parsed()) return CmdApply(g, file);
  if (del->parsed()) return CmdDelete(g, kind, name);
  if (scale->parsed()) {
    if (!replicas && !autoscale) return Fail(Status::Error("scale: give --replicas N or --auto"));
    return CmdScale(g, kind, name, replicas, wait, timeout_s);
  }
  if (exec->parsed()) return CmdExec(g, pod, user, cmd);
  if (logs->parsed()) return CmdLogs(g, pod, tail);
  if (int rc = run_workspace_commands(); rc >= 0) return rc;
  if (int rc = run_project_commands(); rc >= 0) return rc;
  if (int rc = run_kubernetes_commands(); rc >= 0) return rc;
  return run_controlplane_commands();
}

}  // namespace hpc::cli
