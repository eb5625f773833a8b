#include "cli/inspect_commands.h"

#include <iostream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "api/validation.h"
#include "operator/conditions.h"
#include "operator/store.h"

namespace hpc::cli {

using nlohmann::json;

namespace {

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
  json j = {{"name", p.name},         {"phase", runtime::PodPhaseName(p.phase)},
            {"ready", p.ready},       {"ip", p.ip},
            {"restarts", p.restarts}, {"startedAt", p.started_at},
            {"labels", p.labels},     {"message", p.message}};
  if (!p.resources.requests.empty() || !p.resources.limits.empty()) {
    j["resources"] = {{"requests", ResourceListJson(p.resources.requests)},
                      {"limits", ResourceListJson(p.resources.limits)}};
    // Said plainly, so nobody reads a limit as a guarantee this host does not give.
    if (!p.not_enforced.empty()) j["resources"]["notEnforced"] = p.not_enforced;
  }
  return j;
}

int Output(const json& j, const std::string& format) {
  if (format == "json")
    std::cout << j.dump(2) << "\n";
  else
    std::cout << api::JsonToYaml(j);
  return 0;
}

}  // namespace

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
                             "PARTITION", "MODE", "DESIRED", "CURRENT", "READY", "BUSY", "IDLE", "DRAINING",
                             "UNHEALTHY", "MIN/MAX", "LAST DECISION");
    auto c = store.LoadCluster();
    const int cluster_min = c.ok() ? c->spec.min_replica_count : 0;
    for (const auto& n : *nss) {
      int min = n.MinReplicas(cluster_min);
      std::cout << fmt::format("{:<14} {:<12} {:<6} {:>7} {:>7} {:>5} {:>4} {:>4} {:>8} {:>9} {:>9}  {}\n",
                               n.metadata.name, n.PartitionName(), n.spec.replicas ? "manual" : "auto",
                               n.status.desired, n.status.replicas, n.status.ready, n.status.busy, n.status.idle,
                               n.status.draining, n.status.unhealthy, fmt::format("{}/{}", min, n.spec.max_replicas),
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
  for (const auto& [k, v] : c->status.components) std::cout << fmt::format("  {:<17} {}\n", k, v);
  if (c->spec.backup_controller) {
    std::cout << fmt::format("Leading controller: {}\n", c->status.leading_controller.empty()
                                                             ? "none (a takeover under way, or no controller answers)"
                                                             : c->status.leading_controller);
  }
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

}  // namespace hpc::cli
