// An in-memory PodRuntime for unit tests: config maps, secrets, volumes and pods are kept in
// maps, every Exec is recorded, and its answer comes from `exec_handler` (exit 0 with no output
// when unset), so a test scripts what a command inside a pod prints.
#pragma once

#include <fmt/format.h>

#include <ctime>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/pod_runtime.h"

namespace hpc::fakes {

class FakePodRuntime : public runtime::PodRuntime {
 public:
  struct ExecCall {
    std::string pod;
    runtime::ExecOptions opts;
  };

  std::map<std::string, runtime::ConfigMap> config_maps;
  std::map<std::string, runtime::Secret> secrets;
  std::map<std::string, runtime::NetworkPolicy> network_policies;
  std::map<std::string, uint32_t> volumes;  // name -> mode
  std::map<std::string, bool> retained;     // name -> kept when the cluster is deleted
  std::map<std::string, runtime::PodSpec> pods;
  std::map<std::string, int> restarts;        // how often each pod was restarted, as ListPods reports it
  std::map<std::string, int64_t> started_at;  // when each pod's process started (unix s); 0 when unset
  std::set<std::string> not_ready;            // pods that run but whose readiness probe fails
  std::vector<std::string> created;           // every CreatePod that made a pod, in order
  std::vector<std::string> deleted;           // every DeletePod, in order
  std::vector<std::string> forgotten;         // every ForgetPod, in order
  // Pods whose machine is gone: DeletePod only marks them as being deleted (delete_by), as a
  // Kubernetes pod stays while its node's kubelet never confirms; ForgetPod removes them.
  std::set<std::string> unreachable;
  std::map<std::string, int64_t> delete_by;
  int64_t grace_seconds = 30;
  std::vector<ExecCall> execs;
  std::function<ProcessResult(const std::string& pod, const runtime::ExecOptions&)> exec_handler;
  std::set<std::string> exec_fails;  // pods no command can run in (gone with their machine)

  Status ApplyConfigMap(const runtime::ConfigMap& cm) override {
    config_maps[cm.name] = cm;
    return Status::Ok();
  }
  Result<std::optional<runtime::ConfigMap>> GetConfigMap(const std::string& name) override {
    auto it = config_maps.find(name);
    return it == config_maps.end() ? std::optional<runtime::ConfigMap>() : std::optional(it->second);
  }
  Status DeleteConfigMap(const std::string& name) override {
    config_maps.erase(name);
    return Status::Ok();
  }
  Status ApplyNetworkPolicy(const runtime::NetworkPolicy& p) override {
    network_policies[p.name] = p;
    return Status::Ok();
  }
  Result<std::optional<runtime::NetworkPolicy>> GetNetworkPolicy(const std::string& name) override {
    auto it = network_policies.find(name);
    return it == network_policies.end() ? std::optional<runtime::NetworkPolicy>() : std::optional(it->second);
  }
  Status DeleteNetworkPolicy(const std::string& name) override {
    network_policies.erase(name);
    return Status::Ok();
  }
  Status ApplySecret(const runtime::Secret& s) override {
    secrets[s.name] = s;
    return Status::Ok();
  }
  Result<std::optional<runtime::Secret>> GetSecret(const std::string& name) override {
    auto it = secrets.find(name);
    return it == secrets.end() ? std::optional<runtime::Secret>() : std::optional(it->second);
  }
  Status DeleteSecret(const std::string& name) override {
    secrets.erase(name);
    return Status::Ok();
  }
  Status EnsureVolume(const runtime::Volume& v) override {
    volumes[v.name] = v.mode;
    retained[v.name] = v.retain;
    return Status::Ok();
  }
  Status CreatePod(const runtime::PodSpec& spec) override {
    auto it = pods.find(spec.name);
    if (it != pods.end() && !(it->second == spec)) return Status::Errorf("pod {} exists with another spec", spec.name);
    if (it == pods.end()) created.push_back(spec.name);
    pods[spec.name] = spec;
    return Status::Ok();
  }
  Status DeletePod(const std::string& name) override {
    deleted.push_back(name);
    if (unreachable.count(name) && pods.count(name)) {
      delete_by.try_emplace(name, std::time(nullptr) + grace_seconds);
      return Status::Ok();
    }
    pods.erase(name);
    return Status::Ok();
  }
  Status ForgetPod(const std::string& name) override {
    forgotten.push_back(name);
    pods.erase(name);
    delete_by.erase(name);
    unreachable.erase(name);
    return Status::Ok();
  }
  Result<std::vector<runtime::PodStatus>> ListPods(const std::map<std::string, std::string>& selector) override {
    std::vector<runtime::PodStatus> out;
    for (const auto& [name, spec] : pods) {
      bool match = true;
      for (const auto& [k, v] : selector) {
        auto it = spec.labels.find(k);
        match = match && it != spec.labels.end() && it->second == v;
      }
      if (!match) continue;
      runtime::PodStatus st;
      st.name = name;
      st.labels = spec.labels;
      st.phase = runtime::PodPhase::kRunning;
      st.ready = !not_ready.count(name);
      st.restarts = restarts.count(name) ? restarts.at(name) : 0;
      st.started_at = started_at.count(name) ? started_at.at(name) : 0;
      st.delete_by = delete_by.count(name) ? delete_by.at(name) : 0;
      st.image = spec.image;
      // A running pod has an address; a stable one per name, as the local runtime's are.
      st.ip = fmt::format("10.99.{}.{}", std::hash<std::string>{}(name) % 250,
                          std::hash<std::string>{}(name) / 250 % 250 + 1);
      out.push_back(st);
    }
    return out;
  }
  Result<std::optional<runtime::PodSpec>> GetPodSpec(const std::string& name) override {
    auto it = pods.find(name);
    return it == pods.end() ? std::optional<runtime::PodSpec>() : std::optional(it->second);
  }
  Result<ProcessResult> Exec(const std::string& pod, const runtime::ExecOptions& opts) override {
    execs.push_back({pod, opts});
    if (exec_fails.count(pod)) return Status::FailedPrecondition("pod " + pod + " is not running");
    if (exec_handler) return exec_handler(pod, opts);
    ProcessResult r;
    r.exit_code = 0;
    return r;
  }
  Result<int> ExecInteractive(const std::string& pod, const runtime::ExecOptions& opts) override {
    execs.push_back({pod, opts});
    return 0;
  }
  Result<std::string> Logs(const std::string&, size_t) override { return std::string(); }

  // The argv of every Exec, each joined with spaces, in order.
  std::vector<std::string> ExecLines() const {
    std::vector<std::string> out;
    for (const auto& e : execs) {
      std::string line;
      for (const auto& a : e.opts.argv) line += (line.empty() ? "" : " ") + a;
      out.push_back(line);
    }
    return out;
  }
};

}  // namespace hpc::fakes
