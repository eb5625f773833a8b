// A stand-in kubelet for hpcplane's tests: it runs the pods that the test API server
// (tests/kubernetes/apiserver.py) holds for hpcplane's clusters as local pods (Linux namespaces,
// src/runtime/local/), so `hpcplane operator` brings up real Slurm from Kubernetes objects on
// one machine. No kubelet can be installed here, so this does the kubelet's part of the contract
// that the operator depends on, from the Pod objects alone (never from hpcplane's pod-spec
// annotation):
//  - it schedules every unbound pod of hpcplane's to its node (spec.nodeName) and registers that
//    node with its exec endpoint (status.daemonEndpoints), where the API server sends pods/exec;
//  - the image is ignored (every container runs this machine's programs), except for what the
//    Slurm image links: /etc/passwd and /etc/group into /etc/hpcplane/users; command and args,
//    env, workingDir, runAsUser/runAsGroup, readiness and liveness probes, memory limits and
//    restartPolicy are honoured;
//  - volumes: configMap and secret (files with defaultMode, a configMap refreshed when it
//    changes; a file mounted by subPath is a copy taken when the container starts, as Kubernetes
//    never updates those), emptyDir (shared by the pod's
//    containers), persistentVolumeClaim (a directory per claim that outlives its pods),
//    hostPath;
//  - init containers run in order, each to completion; native sidecars (init containers with
//    restartPolicy Always) start and become ready before the main container;
//  - every container is its own local pod (`<hostname>` for the main one, `<hostname>-<name>`
//    for the others); the pod's IP is the main container's, and /etc/hosts resolves every pod
//    of the cluster by hostname, as the cluster's headless Service does;
//  - status: phase, podIP, startTime, conditions (PodScheduled, Initialized, ContainersReady,
//    Ready), container statuses with restart counts;
//  - graceful deletion: a pod with a deletionTimestamp is stopped, then deleted with
//    gracePeriodSeconds=0; a pod gone from the API is stopped.
// Not modelled: images, resource requests and CPU limits, other volume types, env valueFrom,
// pod networking across machines, node status beyond Ready.
//
// One process supervises (it starts, restarts and probes the local pods); a second one, forked
// at start, serves exec, so that its commands' processes are never reaped by the supervisor's
// waitpid(-1).
//
// Usage: kubernetes_test_kubelet --kubeconfig FILE --dir DIR --hpcplane BINARY --subnet A.B.C.0/24
//        [--node NAME]
// Prints "kubelet NODE ready, exec on 127.0.0.1:PORT" once it serves; stops every pod, releases
// the network and removes DIR on SIGTERM.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/jwt.h"
#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/objects.h"
#include "runtime/local/local_runtime.h"

namespace {

// What the kubelet could not do is said, and it goes on (as a kubelet does).
void Warn(const hpc::Status& s, const char* what) {
  if (!s.ok()) spdlog::warn("kubelet: {}: {}", what, s.message());
}

namespace k8s = hpc::runtime::kubernetes;
namespace rt = hpc::runtime;
using hpc::Result;
using hpc::Status;
using nlohmann::json;

volatile sig_atomic_t g_stop = 0;

// Where the Slurm image links /etc/passwd and /etc/group to (op::kUsersDir).
constexpr const char* kImageUsersDir = "/etc/hpcplane/users";
void OnStop(int) { g_stop = 1; }

struct Args {
  std::string kubeconfig;
  std::string dir;
  std::string hpcplane;
  std::string subnet;
  std::string node = "test-node-0";
};

int64_t NowUnix() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Rfc3339(int64_t unix_seconds) {
  std::time_t t = unix_seconds;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// A memory quantity in MiB ("512Mi", "2Gi", "1000000000"); 0 when absent or not understood.
int64_t MiB(const std::string& q) {
  if (q.empty()) return 0;
  size_t end = 0;
  int64_t n = 0;
  try {
    n = std::stoll(q, &end);
  } catch (...) {
    return 0;
  }
  const std::string unit = q.substr(end);
  if (unit == "Mi") return n;
  if (unit == "Gi") return n * 1024;
  if (unit == "Ki") return n / 1024;
  if (unit.empty()) return n >> 20;
  return 0;
}

// What the exec server needs of a container: where it runs and as whom.
json ExecEntry(const std::string& local_pod, const rt::PodSpec& spec) {
  return {{"local", local_pod}, {"uid", spec.uid}, {"env", spec.env}};
}

// One container's run as a local pod.
struct ContainerRun {
  std::string name;   // the container's
  std::string local;  // the local pod's
  rt::PodSpec spec;
  bool sidecar = false;  // a native sidecar: runs beside the main container, must be ready first
  bool done = false;     // a one-shot init container that succeeded
};

struct HostedPod {
  std::string ns, name, uid, cluster, hostname;
  std::string dir;  // its volumes
  std::vector<ContainerRun> inits;
  ContainerRun main;
  bool main_started = false;
  int64_t start_time = 0;
  std::string waiting;                                             // why it cannot run, when it cannot
  std::map<std::string, std::pair<std::string, int>> config_maps;  // volume dir -> (config map, mode)
  json last_status;
};

class Kubelet {
 public:
  Kubelet(Args args, std::shared_ptr<k8s::ApiClient> api) : args_(std::move(args)), api_(std::move(api)) {}

  void Pass() {
    auto list = api_->Get("/api/v1/pods?labelSelector=" +
                          k8s::QueryEscape(std::string(k8s::kManagedByLabel) + "=" + k8s::kManagedBy));
    // The API out of sight: keep everything running as it is.
    if (!list.ok()) {
      spdlog::warn("kubelet: list pods: {}", list.status().message());
      return;
    }
    std::set<std::string> listed;
    for (const auto& pod : (*list)["items"]) {
      const json& meta = pod["metadata"];
      const std::string uid = meta.value("uid", "");
      const std::string node = pod["spec"].value("nodeName", "");
      if (node.empty()) {
        Bind(pod);
        continue;
      }
      if (node != args_.node) continue;
      listed.insert(uid);
      if (meta.contains("deletionTimestamp")) {
        Stop(uid);
        auto s = api_->Delete(PodPath(meta.value("namespace", ""), meta.value("name", "")) + "?gracePeriodSeconds=0");
        if (!s.ok() && s.code() != hpc::StatusCode::kNotFound) spdlog::warn("kubelet: delete: {}", s.message());
        listed.erase(uid);
        continue;
      }
      if (!pods_.count(uid)) Admit(pod);
    }
    for (auto it = pods_.begin(); it != pods_.end();) {
      if (listed.count(it->first)) {
        ++it;
        continue;
      }
      const std::string uid = it->first;
      ++it;
      Stop(uid);
    }
    for (auto& [key, runtime] : runtimes_) runtime->Supervise();
    const bool refresh = std::chrono::steady_clock::now() >= next_refresh_;
    if (refresh) next_refresh_ = std::chrono::steady_clock::now() + std::chrono::seconds(1);
    for (auto& [uid, p] : pods_) {
      if (refresh) RefreshConfigMaps(&p);
      Advance(&p);
      Report(&p);
    }
  }

  void StopAll() {
    std::vector<std::string> uids;
    for (const auto& [uid, p] : pods_) uids.push_back(uid);
    for (const auto& uid : uids) Stop(uid);
    for (auto& [key, runtime] : runtimes_) {
      if (Status s = runtime->Teardown(); !s.ok()) spdlog::warn("kubelet: teardown {}: {}", key, s.message());
    }
  }

  Status RegisterNode(int exec_port) {
    json node = {{"apiVersion", "v1"},
                 {"kind", "Node"},
                 {"metadata", {{"name", args_.node}, {"labels", {{"kubernetes.io/hostname", args_.node}}}}}};
    auto created = api_->Post("/api/v1/nodes", node);
    if (!created.ok() && created.status().code() != hpc::StatusCode::kAlreadyExists) return created.status();
    json status = {
        {"status",
         {{"addresses", json::array({{{"type", "InternalIP"}, {"address", "127.0.0.1"}}})},
          {"daemonEndpoints", {{"kubeletEndpoint", {{"Port", exec_port}}}}},
          {"conditions", json::array({{{"type", "Ready"}, {"status", "True"}, {"reason", "KubeletReady"}}})}}}};
    return api_->MergePatch("/api/v1/nodes/" + args_.node + "/status", status).status();
  }

 private:
  static std::string PodPath(const std::string& ns, const std::string& name) {
    return fmt::format("/api/v1/namespaces/{}/pods/{}", ns, name);
  }

  // The scheduler's part: every pod goes to this one node.
  void Bind(const json& pod) {
    const json& meta = pod["metadata"];
    if (meta.contains("deletionTimestamp")) return;
    const std::string name = meta.value("name", "");
    auto r = api_->Post(PodPath(meta.value("namespace", ""), name) + "/binding",
                        {{"apiVersion", "v1"},
                         {"kind", "Binding"},
                         {"metadata", {{"name", name}}},
                         {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", args_.node}}}});
    if (!r.ok()) spdlog::warn("kubelet: bind {}: {}", name, r.status().message());
  }

  Result<rt::local::LocalRuntime*> RuntimeFor(const std::string& ns, const std::string& cluster) {
    const std::string key = ns + "/" + cluster;
    auto it = runtimes_.find(key);
    if (it != runtimes_.end()) return it->second.get();
    if (!runtimes_.empty()) {
      return Status::FailedPrecondition("this stand-in kubelet hosts the pods of one cluster only");
    }
    rt::local::LocalRuntime::Options o;
    o.dir = fmt::format("{}/clusters/{}-{}", args_.dir, ns, cluster);
    o.cluster_key = o.dir;
    o.subnet = args_.subnet;
    o.self_exe = args_.hpcplane;
    o.supervise = true;
    o.stop_grace = std::chrono::milliseconds(5000);
    ASSIGN_OR_RETURN(auto runtime, rt::local::LocalRuntime::Create(o));
    auto* raw = runtime.get();
    runtimes_[key] = std::move(runtime);
    return raw;
  }

  Result<json> GetObject(const std::string& ns, const std::string& plural, const std::string& name) {
    return api_->Get(fmt::format("/api/v1/namespaces/{}/{}/{}", ns, plural, name));
  }

  // Writes a config map's or secret's files into `dir` with `mode`, each only when it changed.
  static Status WriteFiles(const std::string& dir, const std::map<std::string, std::string>& data, int mode) {
    RETURN_IF_ERROR(hpc::files::MakeDirs(dir, 0755));
    for (const auto& [key, value] : data) {
      if (key.empty() || key.find('/') != std::string::npos || key == "." || key == "..") {
        return Status::Errorf("key \"{}\" is not a file name", key);
      }
      auto old = hpc::files::Read(dir + "/" + key);
      if (old.ok() && *old == value) continue;
      // In place: a container that mounts the whole volume sees the new content (as Kubernetes'
      // atomic update of the volume gives); one that mounted a file by subPath holds a copy.
      if (old.ok()) {
        RETURN_IF_ERROR(hpc::files::WriteInPlace(dir + "/" + key, value, static_cast<mode_t>(mode)));
      } else {
        RETURN_IF_ERROR(hpc::files::WriteAtomic(dir + "/" + key, value, static_cast<mode_t>(mode), 0, 0));
      }
    }
    return Status::Ok();
  }

  Result<std::map<std::string, std::string>> ConfigMapData(const std::string& ns, const std::string& name) {
    ASSIGN_OR_RETURN(json cm, GetObject(ns, "configmaps", name));
    return cm.value("data", json::object()).get<std::map<std::string, std::string>>();
  }

  // Each pod volume as a host directory (or file) the local pods mount.
  Result<std::map<std::string, std::string>> PrepareVolumes(const json& pod, HostedPod* p) {
    std::map<std::string, std::string> paths;
    for (const auto& v : pod["spec"].value("volumes", json::array())) {
      const std::string name = v.value("name", "");
      const std::string dir = p->dir + "/volumes/" + name;
      if (v.contains("configMap")) {
        const std::string cm = v["configMap"].value("name", "");
        const int mode = v["configMap"].value("defaultMode", 0644);
        ASSIGN_OR_RETURN(auto data, ConfigMapData(p->ns, cm));
        RETURN_IF_ERROR(WriteFiles(dir, data, mode));
        p->config_maps[dir] = {cm, mode};
      } else if (v.contains("secret")) {
        ASSIGN_OR_RETURN(json secret, GetObject(p->ns, "secrets", v["secret"].value("secretName", "")));
        std::map<std::string, std::string> data;
        const json encoded = secret.value("data", json::object());  // items() of a temporary dangles
        for (const auto& [key, value] : encoded.items()) {
          ASSIGN_OR_RETURN(data[key], hpc::jwt::Base64Decode(value.get<std::string>()));
        }
        RETURN_IF_ERROR(WriteFiles(dir, data, v["secret"].value("defaultMode", 0644)));
      } else if (v.contains("emptyDir")) {
        RETURN_IF_ERROR(hpc::files::MakeDirs(dir, 0777));
        ::chmod(dir.c_str(), 01777 & 0777);
      } else if (v.contains("persistentVolumeClaim")) {
        const std::string claim = v["persistentVolumeClaim"].value("claimName", "");
        RETURN_IF_ERROR(GetObject(p->ns, "persistentvolumeclaims", claim).status());
        const std::string claim_dir = fmt::format("{}/claims/{}/{}", args_.dir, p->ns, claim);
        if (!hpc::files::Exists(claim_dir)) RETURN_IF_ERROR(hpc::files::MakeDirs(claim_dir, 0755));
        paths[name] = claim_dir;
        continue;
      } else if (v.contains("hostPath")) {
        paths[name] = v["hostPath"].value("path", "");
        continue;
      } else {
        return Status::Errorf(
            "volume {}: only configMap, secret, emptyDir, persistentVolumeClaim and hostPath "
            "are run by the stand-in kubelet",
            name);
      }
      paths[name] = dir;
    }
    return paths;
  }

  static Result<rt::PodSpec> ContainerSpec(const json& pod, const json& c, const std::string& local,
                                           const std::map<std::string, std::string>& volumes,
                                           const std::string& pod_dir) {
    rt::PodSpec s;
    s.name = local;
    const std::string container = c.value("name", "");
    for (const auto& part : {"command", "args"}) {
      for (const auto& a : c.value(part, json::array())) s.command.push_back(a.get<std::string>());
    }
    if (s.command.empty()) {
      return Status::Errorf("container {}: no command (images are not run here, so there is no entrypoint)", container);
    }
    for (const auto& e : c.value("env", json::array())) {
      if (!e.contains("value"))
        return Status::Errorf("container {}: env {}: only value is supported", container, e.value("name", ""));
      s.env[e.value("name", "")] = e.value("value", "");
    }
    const json pod_sc = pod["spec"].value("securityContext", json::object());
    const json sc = c.value("securityContext", json::object());
    s.uid = sc.value("runAsUser", pod_sc.value("runAsUser", int64_t{0}));
    s.gid = sc.value("runAsGroup", pod_sc.value("runAsGroup", int64_t{0}));
    s.working_dir = c.value("workingDir", "/");
    std::map<std::string, json> by_name;
    for (const auto& v : pod["spec"].value("volumes", json::array())) by_name[v.value("name", "")] = v;
    for (const auto& m : c.value("volumeMounts", json::array())) {
      const std::string vol = m.value("name", "");
      const std::string path = m.value("mountPath", "");
      auto source = volumes.find(vol);
      if (source == volumes.end()) return Status::Errorf("container {}: volume {} is not defined", container, vol);
      if (path == "/tmp" || path == "/dev/shm") {
        // Every local pod has its own /tmp and /dev/shm of this size.
        s.tmp_mib = std::max<int64_t>(s.tmp_mib, MiB(by_name[vol]["emptyDir"].value("sizeLimit", "")));
        continue;
      }
      const bool projected = by_name[vol].contains("configMap") || by_name[vol].contains("secret");
      const std::string sub_path = m.value("subPath", "");
      if (projected && !sub_path.empty()) {
        // Kubernetes never updates a file of a ConfigMap or Secret mounted by subPath: the
        // container gets the file as it was when it started.
        if (sub_path.find('/') != std::string::npos || sub_path == "..") {
          return Status::Errorf("container {}: subPath {}: not a file of the volume", container, sub_path);
        }
        ASSIGN_OR_RETURN(std::string content, hpc::files::Read(source->second + "/" + sub_path));
        const std::string copy = fmt::format("{}/subpath/{}-{}-{}", pod_dir, local, vol, sub_path);
        RETURN_IF_ERROR(hpc::files::MakeDirs(pod_dir + "/subpath", 0755));
        RETURN_IF_ERROR(hpc::files::WriteAtomic(copy, content, 0644, 0, 0));
        s.mounts.push_back({rt::MountSource::kHostPath, copy, path, "", true});
        continue;
      }
      s.mounts.push_back(
          {rt::MountSource::kHostPath, source->second, path, sub_path, projected || m.value("readOnly", false)});
      if (path == kImageUsersDir) {
        // What the Slurm image does with links (images/slurm.Containerfile): /etc/passwd and
        // /etc/group are the mounted directory's files, and follow its updates.
        s.mounts.push_back({rt::MountSource::kHostPath, source->second + "/passwd", "/etc/passwd", "", true});
        s.mounts.push_back({rt::MountSource::kHostPath, source->second + "/group", "/etc/group", "", true});
      }
    }
    auto probe = [](const json& j) {
      rt::Probe p;
      if (j.contains("tcpSocket")) p.tcp_port = j["tcpSocket"].value("port", 0);
      if (j.contains("httpGet")) {
        p.tcp_port = j["httpGet"].value("port", 0);
        p.http_path = j["httpGet"].value("path", "/");
      }
      if (j.contains("exec")) p.command = j["exec"].value("command", std::vector<std::string>{});
      return p;
    };
    if (c.contains("readinessProbe"))
      s.readiness = probe(c["readinessProbe"]);
    else if (c.contains("startupProbe"))
      s.readiness = probe(c["startupProbe"]);
    if (c.contains("livenessProbe")) {
      const json& l = c["livenessProbe"];
      if (l.contains("httpGet")) {
        s.liveness.http_port = l["httpGet"].value("port", 0);
        const std::string path = l["httpGet"].value("path", "/");
        if (path != "/") s.liveness.http_path = path;  // "/": any answer, as slurmrestd's probe wants
      }
      if (l.contains("exec")) s.liveness.command = l["exec"].value("command", std::vector<std::string>{});
      s.liveness.period_seconds = l.value("periodSeconds", 10);
      s.liveness.timeout_seconds = l.value("timeoutSeconds", 1);
      s.liveness.failure_threshold = l.value("failureThreshold", 3);
    }
    s.resources.limits.memory_mib =
        MiB(c.value("resources", json::object()).value("limits", json::object()).value("memory", ""));
    const std::string policy = pod["spec"].value("restartPolicy", "Always");
    s.restart_policy = policy == "Never"       ? rt::RestartPolicy::kNever
                       : policy == "OnFailure" ? rt::RestartPolicy::kOnFailure
                                               : rt::RestartPolicy::kAlways;
    s.labels = {{"kubelet.hpcplane.io/pod", pod["metadata"].value("uid", "")}};
    return s;
  }

  void Admit(const json& pod) {
    const json& meta = pod["metadata"];
    HostedPod p;
    p.ns = meta.value("namespace", "");
    p.name = meta.value("name", "");
    p.uid = meta.value("uid", "");
    p.cluster = meta.value("labels", json::object()).value("hpcplane.io/cluster", "");
    p.hostname = pod["spec"].value("hostname", p.name);
    p.dir = fmt::format("{}/pods/{}", args_.dir, p.uid);
    p.start_time = NowUnix();
    Status s = Translate(pod, &p);
    if (!s.ok()) {
      p.waiting = s.message();
      spdlog::warn("kubelet: pod {}/{}: {}", p.ns, p.name, p.waiting);
    } else {
      spdlog::info("kubelet: pod {}/{} admitted as {}", p.ns, p.name, p.hostname);
    }
    pods_[p.uid] = std::move(p);
  }

  Status Translate(const json& pod, HostedPod* p) {
    RETURN_IF_ERROR(RuntimeFor(p->ns, p->cluster).status());
    ASSIGN_OR_RETURN(auto volumes, PrepareVolumes(pod, p));
    json exec_entries = json::object();
    for (const auto& c : pod["spec"].value("initContainers", json::array())) {
      ContainerRun run;
      run.name = c.value("name", "");
      run.local = p->hostname + "-" + run.name;
      ASSIGN_OR_RETURN(run.spec, ContainerSpec(pod, c, run.local, volumes, p->dir));
      run.sidecar = c.value("restartPolicy", "") == "Always";
      run.spec.restart_policy = run.sidecar ? rt::RestartPolicy::kAlways : rt::RestartPolicy::kNever;
      if (!run.sidecar) run.spec.liveness = {};
      exec_entries[run.name] = ExecEntry(run.local, run.spec);
      p->inits.push_back(std::move(run));
    }
    const auto containers = pod["spec"].value("containers", json::array());
    if (containers.size() != 1) return Status::Error("the stand-in kubelet runs pods of one container");
    p->main.name = containers[0].value("name", "");
    p->main.local = p->hostname;
    ASSIGN_OR_RETURN(p->main.spec, ContainerSpec(pod, containers[0], p->main.local, volumes, p->dir));
    exec_entries[p->main.name] = ExecEntry(p->main.local, p->main.spec);
    const json entry = {{"runtime", RuntimeDir(p)}, {"subnet", args_.subnet}, {"containers", exec_entries}};
    return hpc::files::WriteAtomic(ExecFile(args_.dir, p->ns, p->name), entry.dump(), 0600);
  }

  std::string RuntimeDir(const HostedPod* p) const {
    return fmt::format("{}/clusters/{}-{}", args_.dir, p->ns, p->cluster);
  }

 public:
  static std::string ExecFile(const std::string& dir, const std::string& ns, const std::string& pod) {
    return fmt::format("{}/exec/{}_{}.json", dir, ns, pod);
  }

 private:
  void RefreshConfigMaps(HostedPod* p) {
    for (const auto& [dir, cm] : p->config_maps) {
      auto data = ConfigMapData(p->ns, cm.first);
      if (data.ok()) Warn(WriteFiles(dir, *data, cm.second), "config map files");
    }
  }

  std::map<std::string, rt::PodStatus> LocalStatus(const HostedPod& p) {
    std::map<std::string, rt::PodStatus> out;
    auto runtime = runtimes_.find(p.ns + "/" + p.cluster);
    if (runtime == runtimes_.end()) return out;
    auto list = runtime->second->ListPods({{"kubelet.hpcplane.io/pod", p.uid}});
    if (list.ok()) {
      for (auto& s : *list) out[s.name] = std::move(s);
    }
    return out;
  }

  // Starts what comes next: the first init container not done, else the main container.
  void Advance(HostedPod* p) {
    if (!p->waiting.empty() || p->main_started) return;
    auto runtime = runtimes_.at(p->ns + "/" + p->cluster).get();
    auto local = LocalStatus(*p);
    for (auto& init : p->inits) {
      if (init.done) continue;
      auto st = local.find(init.local);
      if (st == local.end()) {
        if (Status s = runtime->CreatePod(init.spec); !s.ok()) spdlog::warn("kubelet: {}: {}", init.local, s.message());
        return;
      }
      if (init.sidecar) {
        if (!(st->second.phase == rt::PodPhase::kRunning && st->second.ready)) return;
        continue;
      }
      if (st->second.phase == rt::PodPhase::kSucceeded) {
        Warn(runtime->DeletePod(init.local), "delete init container");
        init.done = true;
        continue;
      }
      if (st->second.phase == rt::PodPhase::kFailed) {
        // As with restartPolicy Always: run it again.
        spdlog::warn("kubelet: init container {} failed: {}", init.local, runtime->Logs(init.local, 20).value_or(""));
        Warn(runtime->DeletePod(init.local), "delete init container");
      }
      return;
    }
    if (Status s = runtime->CreatePod(p->main.spec); !s.ok()) {
      spdlog::warn("kubelet: {}: {}", p->main.local, s.message());
      return;
    }
    p->main_started = true;
  }

  static json ContainerStatus(const ContainerRun& c, const rt::PodStatus* st) {
    json s = {{"name", c.name}, {"image", "local"},  {"imageID", ""},
              {"ready", false}, {"restartCount", 0}, {"started", false}};
    if (!st) {
      s["state"] = {{"waiting", {{"reason", "PodInitializing"}}}};
      return s;
    }
    s["containerID"] = "local://" + c.local;
    s["restartCount"] = st->restarts;
    s["ready"] = st->phase == rt::PodPhase::kRunning && st->ready;
    if (st->phase == rt::PodPhase::kRunning) {
      s["started"] = true;
      s["state"] = {{"running", {{"startedAt", Rfc3339(st->started_at)}}}};
    } else if (st->phase == rt::PodPhase::kSucceeded || st->phase == rt::PodPhase::kFailed) {
      s["state"] = {{"terminated",
                     {{"exitCode", st->phase == rt::PodPhase::kSucceeded ? 0 : 1},
                      {"reason", st->phase == rt::PodPhase::kSucceeded ? "Completed" : "Error"}}}};
    } else {
      s["state"] = {{"waiting", {{"reason", "ContainerCreating"}, {"message", st->message}}}};
    }
    return s;
  }

  void Report(HostedPod* p) {
    auto local = LocalStatus(*p);
    json status = {{"hostIP", "127.0.0.1"}, {"startTime", Rfc3339(p->start_time)}};
    auto condition = [](const char* type, bool value) {
      return json{{"type", type}, {"status", value ? "True" : "False"}};
    };
    json inits = json::array();
    bool initialized = true, sidecars_ready = true;
    for (const auto& init : p->inits) {
      auto st = local.find(init.local);
      json cs = ContainerStatus(init, st == local.end() ? nullptr : &st->second);
      if (init.done) cs["state"] = {{"terminated", {{"exitCode", 0}, {"reason", "Completed"}}}};
      if (!init.sidecar && !init.done) initialized = false;
      if (init.sidecar && !cs.value("ready", false)) sidecars_ready = false;
      inits.push_back(cs);
    }
    auto main = local.find(p->main.local);
    json main_status = ContainerStatus(p->main, main == local.end() ? nullptr : &main->second);
    std::string phase = "Pending";
    if (main != local.end()) {
      status["podIP"] = main->second.ip;
      status["podIPs"] = json::array({{{"ip", main->second.ip}}});
      const rt::PodPhase ph = main->second.phase;
      phase = ph == rt::PodPhase::kRunning     ? "Running"
              : ph == rt::PodPhase::kSucceeded ? "Succeeded"
              : ph == rt::PodPhase::kFailed    ? "Failed"
                                               : "Pending";
    }
    if (!p->waiting.empty()) {
      main_status["state"] = {{"waiting", {{"reason", "CreateContainerConfigError"}, {"message", p->waiting}}}};
    }
    const bool ready = main_status.value("ready", false) && sidecars_ready;
    status["phase"] = phase;
    status["conditions"] = json::array({condition("PodScheduled", true), condition("Initialized", initialized),
                                        condition("ContainersReady", ready), condition("Ready", ready)});
    if (!inits.empty()) status["initContainerStatuses"] = inits;
    status["containerStatuses"] = json::array({main_status});
    if (status == p->last_status) return;
    auto r = api_->MergePatch(PodPath(p->ns, p->name) + "/status", {{"status", status}});
    if (r.ok()) {
      p->last_status = status;
    } else if (r.status().code() != hpc::StatusCode::kNotFound) {
      spdlog::warn("kubelet: status of {}: {}", p->name, r.status().message());
    }
  }

  // Stops every container of the pod (main first, as its sidecars must outlive it) and removes
  // its volumes, except claims.
  void Stop(const std::string& uid) {
    auto it = pods_.find(uid);
    if (it == pods_.end()) return;
    HostedPod& p = it->second;
    auto runtime = runtimes_.find(p.ns + "/" + p.cluster);
    if (runtime != runtimes_.end()) {
      if (p.main_started) Warn(runtime->second->DeletePod(p.main.local), "stop container");
      for (auto init = p.inits.rbegin(); init != p.inits.rend(); ++init)
        Warn(runtime->second->DeletePod(init->local), "stop init container");
    }
    ::unlink(ExecFile(args_.dir, p.ns, p.name).c_str());
    Warn(hpc::files::RemoveAll(p.dir), "remove pod directory");
    spdlog::info("kubelet: pod {}/{} stopped", p.ns, p.name);
    pods_.erase(it);
  }

  Args args_;
  std::shared_ptr<k8s::ApiClient> api_;
  std::map<std::string, std::unique_ptr<rt::local::LocalRuntime>> runtimes_;  // ns/cluster ->
  std::map<std::string, HostedPod> pods_;                                     // by uid
  std::chrono::steady_clock::time_point next_refresh_{};
};

// The exec endpoint, in its own process: POST /exec/NAMESPACE/POD/CONTAINER with
// {"command": [...], "stdin": BASE64}, from the API server with the cluster's bearer token.
int ServeExec(const Args& args, const std::string& token, int port_fd) {
  // A client's view of each cluster's local pods (it execs; the supervisor starts them), opened
  // once: requests are served on several threads.
  struct Runtimes {
    const Args& args;
    std::mutex mu;
    std::map<std::string, std::unique_ptr<rt::local::LocalRuntime>> open;
    Result<rt::local::LocalRuntime*> Open(const std::string& dir, const std::string& subnet) {
      std::lock_guard<std::mutex> lock(mu);
      auto& runtime = open[dir];
      if (!runtime) {
        rt::local::LocalRuntime::Options o;
        o.dir = dir;
        o.cluster_key = dir;
        o.subnet = subnet;
        o.self_exe = args.hpcplane;
        ASSIGN_OR_RETURN(runtime, rt::local::LocalRuntime::Create(o));
      }
      return runtime.get();
    }
  } runtimes{args, {}, {}};
  httplib::Server server;
  server.Post(R"(/exec/([^/]+)/([^/]+)/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    auto fail = [&](int code, const std::string& message) {
      res.status = code;
      res.set_content(json{{"message", message}}.dump(), "application/json");
    };
    if (req.get_header_value("Authorization") != "Bearer " + token) return fail(401, "Unauthorized");
    const std::string ns = req.matches[1], pod = req.matches[2], container = req.matches[3];
    auto entry_text = hpc::files::Read(Kubelet::ExecFile(args.dir, ns, pod));
    if (!entry_text.ok()) return fail(404, fmt::format("pod {}/{} does not run on this node", ns, pod));
    json entry = json::parse(*entry_text, nullptr, false);
    json body = json::parse(req.body, nullptr, false);
    if (!body.is_object() || !body.contains("command") || !body["command"].is_array() || body["command"].empty()) {
      return fail(400, "command is required");
    }
    if (!entry["containers"].contains(container)) {
      return fail(400, fmt::format("container {} is not valid for pod {}", container, pod));
    }
    const json& c = entry["containers"][container];
    auto runtime = runtimes.Open(entry.value("runtime", ""), entry.value("subnet", ""));
    if (!runtime.ok()) return fail(500, runtime.status().message());
    rt::ExecOptions eo;
    const int64_t uid = c.value("uid", int64_t{0});
    eo.user = uid == 0 ? "root" : std::to_string(uid);
    eo.env = c.value("env", std::map<std::string, std::string>{});
    eo.argv = body["command"].get<std::vector<std::string>>();
    eo.timeout = std::chrono::minutes(10);
    auto in = hpc::jwt::Base64Decode(body.value("stdin", ""));
    if (!in.ok()) return fail(400, "stdin is not base64");
    eo.stdin_data = *in;
    auto r = (*runtime)->Exec(c.value("local", ""), eo);
    if (!r.ok()) return fail(500, r.status().message());
    res.set_content(json{{"exitCode", r->exit_code},
                         {"stdout", hpc::jwt::Base64Encode(r->out)},
                         {"stderr", hpc::jwt::Base64Encode(r->err)}}
                        .dump(),
                    "application/json");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  if (port <= 0) return 1;
  if (::write(port_fd, &port, sizeof(port)) != sizeof(port)) return 1;
  ::close(port_fd);
  std::thread stopper([&] {
    while (!g_stop && ::getppid() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  server.listen_after_bind();
  stopper.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  CLI::App app("hpcplane's stand-in kubelet (tests only)");
  app.add_option("--kubeconfig", args.kubeconfig)->required();
  app.add_option("--dir", args.dir)->required();
  app.add_option("--hpcplane", args.hpcplane)->required();
  app.add_option("--subnet", args.subnet)->required();
  app.add_option("--node", args.node);
  CLI11_PARSE(app, argc, argv);
  auto conn = k8s::LoadKubeconfig(args.kubeconfig);
  if (!conn.ok()) {
    fprintf(stderr, "kubelet: %s\n", conn.status().message().c_str());
    return 2;
  }
  if (Status s = hpc::files::MakeDirs(args.dir + "/exec", 0700); !s.ok()) {
    fprintf(stderr, "kubelet: %s\n", s.message().c_str());
    return 2;
  }
  auto api = std::make_shared<k8s::ApiClient>(*conn);
  auto token = api->BearerToken();
  if (!token.ok()) return 2;
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);

  int fds[2];
  if (::pipe(fds) != 0) return 2;
  pid_t exec_server = ::fork();
  if (exec_server == 0) {
    ::close(fds[0]);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    _exit(ServeExec(args, *token, fds[1]));
  }
  ::close(fds[1]);
  int port = 0;
  if (::read(fds[0], &port, sizeof(port)) != sizeof(port)) {
    fprintf(stderr, "kubelet: the exec server did not start\n");
    return 2;
  }
  ::close(fds[0]);

  Kubelet kubelet(args, api);
  if (Status s = kubelet.RegisterNode(port); !s.ok()) {
    fprintf(stderr, "kubelet: register node: %s\n", s.message().c_str());
    ::kill(exec_server, SIGTERM);
    return 2;
  }
  printf("kubelet %s ready, exec on 127.0.0.1:%d\n", args.node.c_str(), port);
  fflush(stdout);
  while (!g_stop) {
    try {
      kubelet.Pass();
    } catch (const std::exception& e) {
      // An object this stand-in does not understand: said, and the pass is retried.
      spdlog::error("kubelet: pass failed: {}", e.what());
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kubelet.StopAll();
  ::kill(exec_server, SIGTERM);
  Warn(hpc::files::RemoveAll(args.dir), "remove kubelet directory");
  spdlog::info("kubelet: stopped");
  return 0;
}
