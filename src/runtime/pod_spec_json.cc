#include "runtime/pod_spec_json.h"

namespace hpc::runtime {

using nlohmann::json;

namespace {

json MountJson(const Mount& m) {
  return {{"source", static_cast<int>(m.source)},
          {"name", m.name},
          {"mountPath", m.mount_path},
          {"subPath", m.sub_path},
          {"readOnly", m.read_only}};
}

json ResourceListJson(const ResourceList& r) {
  return {{"cpus", r.cpus}, {"memoryMiB", r.memory_mib}, {"gpus", r.gpus}};
}

Mount MountFromJson(const json& m) {
  return {static_cast<MountSource>(m.at("source").get<int>()), m.at("name"), m.at("mountPath"), m.at("subPath"),
          m.at("readOnly")};
}

ResourceList ResourceListFromJson(const json& j) {
  return {j.at("cpus").get<int>(), j.at("memoryMiB").get<int64_t>(), j.at("gpus").get<int>()};
}

}  // namespace

json SpecJson(const PodSpec& s) {
  json mounts = json::array();
  for (const auto& m : s.mounts) mounts.push_back(MountJson(m));
  json out = {
      {"name", s.name},
      {"labels", s.labels},
      {"image", s.image},
      {"sharedRoot", s.shared_root},
      {"sharedRootWritable", s.shared_root_writable},
      {"command", s.command},
      {"env", s.env},
      {"uid", s.uid},
      {"gid", s.gid},
      {"workingDir", s.working_dir},
      {"mounts", mounts},
      {"readiness",
       {{"tcpPort", s.readiness.tcp_port}, {"httpPath", s.readiness.http_path}, {"command", s.readiness.command}}},
      {"liveness",
       {{"httpPort", s.liveness.http_port},
        {"httpPath", s.liveness.http_path},
        {"command", s.liveness.command},
        {"periodSeconds", s.liveness.period_seconds},
        {"timeoutSeconds", s.liveness.timeout_seconds},
        {"failureThreshold", s.liveness.failure_threshold}}},
      {"restartPolicy", static_cast<int>(s.restart_policy)},
      {"resources",
       {{"requests", ResourceListJson(s.resources.requests)}, {"limits", ResourceListJson(s.resources.limits)}}},
      {"tmpMiB", s.tmp_mib},
      {"delegateCgroups", s.delegate_cgroups}};
  // Only where there are some: the spec of every other pod reads as it did before the field.
  if (!s.supplemental_groups.empty()) out["supplementalGroups"] = s.supplemental_groups;
  if (!s.placement.empty()) {
    json tolerations = json::array();
    for (const auto& t : s.placement.tolerations) {
      tolerations.push_back(
          {{"key", t.key}, {"operator", t.op}, {"value", t.value}, {"effect", t.effect}, {"seconds", t.seconds}});
    }
    out["placement"] = {{"nodeSelector", s.placement.node_selector},
                        {"tolerations", tolerations},
                        {"priorityClass", s.placement.priority_class},
                        {"imagePullSecrets", s.placement.image_pull_secrets}};
    if (!s.placement.affinity.is_null()) out["placement"]["affinity"] = s.placement.affinity;
    if (!s.placement.security_context.is_null()) out["placement"]["securityContext"] = s.placement.security_context;
  }
  if (!s.sidecars.empty()) {
    json sidecars = json::array();
    for (const auto& c : s.sidecars) {
      json m = json::array();
      for (const auto& mount : c.mounts) m.push_back(MountJson(mount));
      sidecars.push_back({{"name", c.name},
                          {"command", c.command},
                          {"uid", c.uid},
                          {"gid", c.gid},
                          {"mounts", m},
                          {"readiness", {{"tcpPort", c.readiness.tcp_port}, {"command", c.readiness.command}}}});
    }
    out["sidecars"] = sidecars;
  }
  return out;
}

Result<PodSpec> SpecFromJson(const json& j) {
  try {
    PodSpec s;
    s.name = j.at("name");
    s.labels = j.at("labels").get<std::map<std::string, std::string>>();
    s.image = j.value("image", "");
    s.shared_root = j.value("sharedRoot", "");
    s.shared_root_writable = j.value("sharedRootWritable", false);
    s.command = j.at("command").get<std::vector<std::string>>();
    s.env = j.at("env").get<std::map<std::string, std::string>>();
    s.uid = j.at("uid");
    s.gid = j.at("gid");
    s.working_dir = j.at("workingDir");
    s.supplemental_groups = j.value("supplementalGroups", std::vector<int64_t>{});
    for (const auto& m : j.at("mounts")) s.mounts.push_back(MountFromJson(m));
    s.readiness.tcp_port = j.at("readiness").at("tcpPort");
    s.readiness.http_path = j.at("readiness").value("httpPath", "");
    s.readiness.command = j.at("readiness").at("command").get<std::vector<std::string>>();
    s.restart_policy = static_cast<RestartPolicy>(j.at("restartPolicy").get<int>());
    if (j.contains("resources")) {
      s.resources.requests = ResourceListFromJson(j.at("resources").at("requests"));
      s.resources.limits = ResourceListFromJson(j.at("resources").at("limits"));
    } else {  // specs written before resources had a memory limit only
      s.resources.limits.memory_mib = j.value("memoryLimitMiB", int64_t{0});
    }
    s.tmp_mib = j.value("tmpMiB", int64_t{0});
    s.delegate_cgroups = j.value("delegateCgroups", false);
    if (j.contains("liveness")) {  // specs written before liveness probes have none
      const json& l = j.at("liveness");
      s.liveness.http_port = l.at("httpPort");
      s.liveness.http_path = l.value("httpPath", "");
      s.liveness.command = l.at("command").get<std::vector<std::string>>();
      s.liveness.period_seconds = l.at("periodSeconds");
      s.liveness.timeout_seconds = l.at("timeoutSeconds");
      s.liveness.failure_threshold = l.at("failureThreshold");
    }
    if (j.contains("placement")) {
      const json& p = j.at("placement");
      s.placement.node_selector = p.at("nodeSelector").get<std::map<std::string, std::string>>();
      for (const auto& t : p.at("tolerations")) {
        s.placement.tolerations.push_back(
            {t.at("key"), t.at("operator"), t.at("value"), t.at("effect"), t.at("seconds")});
      }
      s.placement.priority_class = p.at("priorityClass");
      s.placement.image_pull_secrets = p.at("imagePullSecrets").get<std::vector<std::string>>();
      if (p.contains("affinity")) s.placement.affinity = p.at("affinity");
      if (p.contains("securityContext")) s.placement.security_context = p.at("securityContext");
    }
    for (const auto& c : j.value("sidecars", json::array())) {
      Sidecar sc;
      sc.name = c.at("name");
      sc.command = c.at("command").get<std::vector<std::string>>();
      sc.uid = c.at("uid");
      sc.gid = c.at("gid");
      for (const auto& m : c.at("mounts")) sc.mounts.push_back(MountFromJson(m));
      sc.readiness.tcp_port = c.at("readiness").at("tcpPort");
      sc.readiness.command = c.at("readiness").at("command").get<std::vector<std::string>>();
      s.sidecars.push_back(std::move(sc));
    }
    return s;
  } catch (const json::exception& e) {
    return Status::Errorf("pod spec: {}", e.what());
  }
}

namespace {
// A port as a number, a range as [first, last].
json PortsJson(const std::vector<PortRange>& ports) {
  json out = json::array();
  for (const auto& p : ports) out.push_back(p.first == p.last ? json(p.first) : json::array({p.first, p.last}));
  return out;
}
std::vector<PortRange> PortsFromJson(const json& j) {
  std::vector<PortRange> out;
  for (const auto& p : j) {
    out.push_back(p.is_array() ? PortRange(p.at(0).get<int>(), p.at(1).get<int>()) : PortRange(p.get<int>()));
  }
  return out;
}
}  // namespace

json NetworkPolicyJson(const NetworkPolicy& p) {
  json ingress = json::array();
  for (const auto& r : p.ingress) ingress.push_back({{"from", r.from}, {"tcpPorts", PortsJson(r.tcp_ports)}});
  return {{"name", p.name}, {"podSelector", p.pod_selector}, {"ingress", ingress}};
}

Result<NetworkPolicy> NetworkPolicyFromJson(const json& j) {
  try {
    NetworkPolicy p;
    p.name = j.at("name").get<std::string>();
    p.pod_selector = j.at("podSelector").get<LabelSelector>();
    for (const auto& r : j.at("ingress")) {
      p.ingress.push_back({r.at("from").get<std::vector<LabelSelector>>(), PortsFromJson(r.at("tcpPorts"))});
    }
    return p;
  } catch (const json::exception& e) {
    return Status::Errorf("network policy: {}", e.what());
  }
}

}  // namespace hpc::runtime
