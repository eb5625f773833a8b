#include "runtime/local/local_runtime_internal.h"


namespace hpc::runtime::local {

using nlohmann::json;

namespace {

json MountJson(const Mount& m) {
  return {{"source", static_cast<int>(m.source)}, {"name", m.name}, {"mountPath", m.mount_path},
          {"subPath", m.sub_path}, {"readOnly", m.read_only}};
}

json ResourceListJson(const ResourceList& r) {
  return {{"cpus", r.cpus}, {"memoryMiB", r.memory_mib}, {"gpus", r.gpus}};
}

ResourceList ResourceListFromJson(const json& j) {
  return {j.at("cpus").get<int>(), j.at("memoryMiB").get<int64_t>(), j.at("gpus").get<int>()};
}

}  // namespace

// What this runtime does not enforce of a pod's resources. Memory limits are enforced by the
// supervisor (resident memory checked every second; the pod is killed and restarted); nothing
// here confines CPU time or devices, and every pod runs on this one machine, so requests
// reserve nothing either (Slurm's node definitions are what divides the machine).
std::vector<std::string> NotEnforced(const Resources& r) {
  std::vector<std::string> out;
  if (r.limits.cpus > 0) out.push_back("limits.cpus: not enforced: the local runtime does not confine CPU time");
  if (r.limits.gpus > 0 || r.requests.gpus > 0) {
    out.push_back("gpus: not isolated: the local runtime does not confine devices; Slurm's GRES divides them");
  }
  if (r.requests.cpus > 0 || r.requests.memory_mib > 0) {
    out.push_back("requests: not reserved: every local pod runs on this machine");
  }
  return out;
}

json SpecJson(const PodSpec& s) {
  json mounts = json::array();
  for (const auto& m : s.mounts) mounts.push_back(MountJson(m));
  return {{"name", s.name},           {"labels", s.labels},
          {"command", s.command},     {"env", s.env},
          {"uid", s.uid},             {"gid", s.gid},
          {"workingDir", s.working_dir}, {"mounts", mounts},
          {"readiness", {{"tcpPort", s.readiness.tcp_port}, {"command", s.readiness.command}}},
          {"liveness",
           {{"httpPort", s.liveness.http_port},
            {"command", s.liveness.command},
            {"periodSeconds", s.liveness.period_seconds},
            {"timeoutSeconds", s.liveness.timeout_seconds},
            {"failureThreshold", s.liveness.failure_threshold}}},
          {"restartPolicy", static_cast<int>(s.restart_policy)},
          {"resources", {{"requests", ResourceListJson(s.resources.requests)}, {"limits", ResourceListJson(s.resources.limits)}}},
          {"tmpMiB", s.tmp_mib}};
}

Result<PodSpec> SpecFromJson(const json& j) {
  try {
    PodSpec s;
    s.name = j.at("name");
    s.labels = j.at("labels").get<std::map<std::string, std::string>>();
    s.command = j.at("command").get<std::vector<std::string>>();
    s.env = j.at("env").get<std::map<std::string, std::string>>();
    s.uid = j.at("uid");
    s.gid = j.at("gid");
    s.working_dir = j.at("workingDir");
    for (const auto& m : j.at("mounts")) {
      s.mounts.push_back({static_cast<MountSource>(m.at("source").get<int>()), m.at("name"), m.at("mountPath"),
                          m.at("subPath"), m.at("readOnly")});
    }
    s.readiness.tcp_port = j.at("readiness").at("tcpPort");
    s.readiness.command = j.at("readiness").at("command").get<std::vector<std::string>>();
    s.restart_policy = static_cast<RestartPolicy>(j.at("restartPolicy").get<int>());
    if (j.contains("resources")) {
      s.resources.requests = ResourceListFromJson(j.at("resources").at("requests"));
      s.resources.limits = ResourceListFromJson(j.at("resources").at("limits"));
    } else {  // specs written before resources had a memory limit only
      s.resources.limits.memory_mib = j.value("memoryLimitMiB", int64_t{0});
    }
    s.tmp_mib = j.value("tmpMiB", int64_t{0});
    if (j.contains("liveness")) {  // specs written before liveness probes have none
      const json& l = j.at("liveness");
      s.liveness.http_port = l.at("httpPort");
      s.liveness.command = l.at("command").get<std::vector<std::string>>();
      s.liveness.period_seconds = l.at("periodSeconds");
      s.liveness.timeout_seconds = l.at("timeoutSeconds");
      s.liveness.failure_threshold = l.at("failureThreshold");
    }
    return s;
  } catch (const json::exception& e) {
    return Status::Errorf("pod spec: {}", e.what());
  }
}

}  // namespace hpc::runtime::local
