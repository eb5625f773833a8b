#include "runtime/kubernetes/kubernetes_runtime.h"

#include <algorithm>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "common/jwt.h"
#include "runtime/kubernetes/exec_stream.h"
#include "runtime/kubernetes/json_fields.h"
#include "runtime/pod_spec_json.h"

namespace hpc::runtime::kubernetes {

using nlohmann::json;

namespace {

constexpr int kConflictRetries = 5;
const char* const kLabelCluster = "hpcplane.io/cluster";

// "UID:GID" of an owner annotation; false when absent or malformed.
bool ParseOwner(const json& meta, int64_t* uid, int64_t* gid) {
  const std::string v = meta.value("annotations", json::object()).value(kOwnerAnnotation, "");
  return std::sscanf(v.c_str(), "%ld:%ld", uid, gid) == 2;  // NOLINT(runtime/printf)
}

uint32_t ParseMode(const json& meta, uint32_t fallback) {
  const std::string v = meta.value("annotations", json::object()).value(kModeAnnotation, "");
  if (v.empty()) return fallback;
  return static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 8));
}

int64_t ParseTime(const std::string& rfc3339) {
  std::tm tm{};
  if (!strptime(rfc3339.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm)) return 0;
  return static_cast<int64_t>(timegm(&tm));
}

}  // namespace

KubernetesRuntime::KubernetesRuntime(std::shared_ptr<ApiClient> api, ObjectContext ctx)
    : api_(std::move(api)), ctx_(std::move(ctx)) {}

std::string KubernetesRuntime::CollectionPath(const std::string& plural) const {
  // Everything hpcplane writes is in the core group, but network policies.
  const char* group = plural == "networkpolicies" ? "/apis/networking.k8s.io/v1" : "/api/v1";
  return fmt::format("{}/namespaces/{}/{}", group, ctx_.namespace_name, plural);
}

std::string KubernetesRuntime::Path(const std::string& plural, const std::string& name) const {
  std::string p = CollectionPath(plural);
  if (!name.empty()) p += "/" + ObjectName(ctx_, name);
  return p;
}

Result<std::optional<json>> KubernetesRuntime::GetObject(const std::string& plural, const std::string& name,
                                                         bool fresh) {
  if (ObjectCache* cache = caches_.Synced(plural); cache && !fresh) {
    return cache->Get(ctx_.namespace_name, ObjectName(ctx_, name));
  }
  auto r = api_->Get(Path(plural, name));
  if (!r.ok() && r.status().code() == StatusCode::kNotFound) return std::optional<json>();
  if (!r.ok()) return r.status();
  return std::optional<json>(std::move(*r));
}

void KubernetesRuntime::Observe(const std::string& plural, const Result<json>& written) {
  if (ObjectCache* cache = caches_.Synced(plural); cache && written.ok()) cache->Observe(*written);
}

bool KubernetesRuntime::Owned(const json& object) const {
  const json labels = object["metadata"].value("labels", json::object());
  return labels.value(kManagedByLabel, "") == kManagedBy && labels.value(kLabelCluster, "") == ctx_.cluster;
}

Status KubernetesRuntime::NotOwned(const std::string& plural, const std::string& object_name) const {
  return Status::FailedPrecondition(
      fmt::format("{} {}/{} exists and is not hpcplane's (no labels {}={}, {}={}): left as it is; rename or remove it",
                  plural, ctx_.namespace_name, object_name, kManagedByLabel, kManagedBy, kLabelCluster, ctx_.cluster));
}

Status KubernetesRuntime::DeleteObject(const std::string& plural, const std::string& name, const std::string& query) {
  // Read from the API: the cache holds only hpcplane's objects, and one made by someone else
  // under the same name must be refused, not taken as absent.
  ASSIGN_OR_RETURN(auto current, GetObject(plural, name, /*fresh=*/true));
  if (!current) return Status::Ok();
  if (!Owned(*current)) return NotOwned(plural, ObjectName(ctx_, name));
  Status s = api_->Delete(Path(plural, name) + query);
  return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
}

Status KubernetesRuntime::Upsert(const std::string& plural, const json& object) {
  const std::string name = object["metadata"]["name"];
  const std::string path = CollectionPath(plural);
  Status last = Status::Ok();
  ObjectCache* cache = caches_.Synced(plural);
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    // The first read may come from the cache; a conflict or a clash reads the API.
    Result<json> current = Status::NotFound("");
    if (cache && attempt == 0) {
      auto held = cache->Get(ctx_.namespace_name, name);
      if (held) current = std::move(*held);
    } else {
      current = api_->Get(path + "/" + name);
    }
    if (!current.ok() && current.status().code() != StatusCode::kNotFound) return current.status();
    if (!current.ok()) {
      auto created = api_->Post(path, object);
      Observe(plural, created);
      if (created.ok()) return Status::Ok();
      last = created.status();
      if (last.code() != StatusCode::kAlreadyExists) return last;
      continue;  // created meanwhile by someone else: read it, and replace it if it is ours
    }
    if (!Owned(*current)) return NotOwned(plural, name);
    json wanted = object;
    wanted["metadata"]["resourceVersion"] = (*current)["metadata"].value("resourceVersion", "");
    json have = *current;
    for (const char* k : {"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields"}) {
      have["metadata"].erase(k);
    }
    json compare = wanted;
    compare["metadata"].erase("resourceVersion");
    // A list's items may come without apiVersion and kind: the path says what they are.
    for (json* o : {&have, &compare}) {
      o->erase("apiVersion");
      o->erase("kind");
    }
    if (have == compare) return Status::Ok();  // nothing to write
    auto replaced = api_->Put(path + "/" + name, wanted);
    Observe(plural, replaced);
    if (replaced.ok()) return Status::Ok();
    last = replaced.status();
    if (last.code() != StatusCode::kConflict) return last;
  }
  return Status::Conflict(
      fmt::format("{} {}: still conflicting after {} tries: {}", plural, name, kConflictRetries, last.message()));
}

Status KubernetesRuntime::ApplyConfigMap(const ConfigMap& cm) {
  RETURN_IF_ERROR(Upsert("configmaps", ConfigMapObject(cm, ctx_)));
  std::lock_guard<std::mutex> lock(mu_);
  known_.config_map_modes[cm.name] = cm.default_mode;
  return Status::Ok();
}

Result<std::optional<ConfigMap>> KubernetesRuntime::GetConfigMap(const std::string& name) {
  ASSIGN_OR_RETURN(auto o, GetObject("configmaps", name));
  if (!o) return std::optional<ConfigMap>();
  ConfigMap cm;
  cm.name = name;
  cm.data = o->value("data", json::object()).get<std::map<std::string, std::string>>();
  cm.default_mode = static_cast<int>(ParseMode((*o)["metadata"], 0644));
  std::lock_guard<std::mutex> lock(mu_);
  known_.config_map_modes[name] = cm.default_mode;
  return std::optional<ConfigMap>(cm);
}

Status KubernetesRuntime::DeleteConfigMap(const std::string& name) { return DeleteObject("configmaps", name); }

Status KubernetesRuntime::ApplyNetworkPolicy(const NetworkPolicy& policy) {
  return Upsert("networkpolicies", NetworkPolicyObject(policy, ctx_));
}

Result<std::optional<NetworkPolicy>> KubernetesRuntime::GetNetworkPolicy(const std::string& name) {
  ASSIGN_OR_RETURN(auto o, GetObject("networkpolicies", name));
  if (!o) return std::optional<NetworkPolicy>();
  ASSIGN_OR_RETURN(NetworkPolicy p, NetworkPolicyFromObject(name, *o));
  return std::optional<NetworkPolicy>(std::move(p));
}

Status KubernetesRuntime::DeleteNetworkPolicy(const std::string& name) { return DeleteObject("networkpolicies", name); }

Status KubernetesRuntime::ApplySecret(const Secret& secret) {
  RETURN_IF_ERROR(Upsert("secrets", SecretObject(secret, ctx_)));
  std::lock_guard<std::mutex> lock(mu_);
  known_.secrets[secret.name] = {secret.name, {}, secret.owner_uid, secret.owner_gid};
  return Status::Ok();
}

Result<std::optional<Secret>> KubernetesRuntime::GetSecret(const std::string& name) {
  ASSIGN_OR_RETURN(auto o, GetObject("secrets", name));
  if (!o) return std::optional<Secret>();
  Secret s;
  s.name = name;
  const json data = o->value("data", json::object());
  for (const auto& [k, v] : data.items()) {
    auto decoded = jwt::Base64Decode(v.get<std::string>());
    if (!decoded.ok()) return Status::Internal(fmt::format("secret {}: key {} is not base64", name, k));
    s.data[k] = *decoded;
  }
  ParseOwner((*o)["metadata"], &s.owner_uid, &s.owner_gid);
  std::lock_guard<std::mutex> lock(mu_);
  known_.secrets[name] = {name, {}, s.owner_uid, s.owner_gid};
  return std::optional<Secret>(s);
}

Status KubernetesRuntime::DeleteSecret(const std::string& name) { return DeleteObject("secrets", name); }

namespace {

// Whether the object carries every one of `annotations` with its value (others may be there too).
bool HasAnnotations(const json& object, const json& annotations) {
  const json have = object.value("metadata", json::object()).value("annotations", json::object());
  for (const auto& [key, value] : annotations.items()) {
    if (!have.contains(key) || have[key] != value) return false;
  }
  return true;
}

// Whether the two objects' owner references differ (absent and empty are the same).
bool OwnersDiffer(const json& a, const json& b) {
  const json none = json::array();
  return a.value("metadata", json::object()).value("ownerReferences", none) !=
         b.value("metadata", json::object()).value("ownerReferences", none);
}

}  // namespace

Status KubernetesRuntime::EnsureVolume(const Volume& volume) {
  json wanted = VolumeClaimObject(volume, ctx_);
  ASSIGN_OR_RETURN(auto have, GetObject("persistentvolumeclaims", volume.name));
  if (have && !Owned(*have)) return NotOwned("persistentvolumeclaims", ObjectName(ctx_, volume.name));
  if (!have) {
    auto created = api_->Post(fmt::format("/api/v1/namespaces/{}/persistentvolumeclaims", ctx_.namespace_name), wanted);
    Observe("persistentvolumeclaims", created);
    if (!created.ok() && created.status().code() != StatusCode::kAlreadyExists) return created.status();
  } else if (!HasAnnotations(*have, wanted["metadata"]["annotations"]) || OwnersDiffer(*have, wanted)) {
    // A claim's spec is immutable; its owner and mode (applied by each pod's prepare step) and
    // whether the SlurmCluster owns it (retainOnDelete changed) are not. Only our annotations are
    // compared: the PV controller and schedulers add their own to every claim.
    json meta = {{"annotations", wanted["metadata"]["annotations"]}};
    meta["ownerReferences"] = wanted["metadata"].value("ownerReferences", json());  // null: none
    auto patched = api_->MergePatch(Path("persistentvolumeclaims", volume.name), {{"metadata", meta}});
    Observe("persistentvolumeclaims", patched);
    RETURN_IF_ERROR(patched.status());
  }
  std::lock_guard<std::mutex> lock(mu_);
  known_.volumes[volume.name] = volume;
  return Status::Ok();
}

Result<MountedObjects> KubernetesRuntime::MountedFor(const PodSpec& spec) {
  std::vector<Mount> mounts = spec.mounts;
  for (const auto& sc : spec.sidecars) mounts.insert(mounts.end(), sc.mounts.begin(), sc.mounts.end());
  if (!spec.shared_root.empty()) mounts.push_back({MountSource::kVolume, spec.shared_root, "/", "", false});
  for (const auto& m : mounts) {
    bool known;
    {
      std::lock_guard<std::mutex> lock(mu_);
      known = (m.source == MountSource::kSecret && known_.secrets.count(m.name)) ||
              (m.source == MountSource::kVolume && known_.volumes.count(m.name)) ||
              (m.source == MountSource::kConfigMap && known_.config_map_modes.count(m.name)) ||
              m.source == MountSource::kEmptyDir || m.source == MountSource::kHostPath;
    }
    if (known) continue;
    if (m.source == MountSource::kSecret) {
      ASSIGN_OR_RETURN(auto s, GetSecret(m.name));
      if (!s) return Status::FailedPrecondition(fmt::format("pod {}: secret {} does not exist yet", spec.name, m.name));
    } else if (m.source == MountSource::kConfigMap) {
      ASSIGN_OR_RETURN(auto cm, GetConfigMap(m.name));
      if (!cm)
        return Status::FailedPrecondition(fmt::format("pod {}: config map {} does not exist yet", spec.name, m.name));
    } else if (m.source == MountSource::kVolume) {
      ASSIGN_OR_RETURN(auto pvc, GetObject("persistentvolumeclaims", m.name));
      if (!pvc)
        return Status::FailedPrecondition(fmt::format("pod {}: volume {} does not exist yet", spec.name, m.name));
      Volume v;
      v.name = m.name;
      ParseOwner((*pvc)["metadata"], &v.owner_uid, &v.owner_gid);
      v.mode = ParseMode((*pvc)["metadata"], 0700);
      std::lock_guard<std::mutex> lock(mu_);
      known_.volumes[m.name] = v;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  return known_;
}

Status KubernetesRuntime::CreatePod(const PodSpec& spec) {
  if (!spec.image.empty() && !ctx_.images.empty() && !ctx_.images.count(spec.image)) {
    return Status::FailedPrecondition(
        fmt::format("pod {}: environment \"{}\" has no image of the cluster's Slurm series on this data plane (the "
                    "operator's --environments)",
                    spec.name, spec.image));
  }
  ASSIGN_OR_RETURN(auto existing, GetObject("pods", spec.name));
  const std::string wanted_spec = SpecJson(spec).dump();
  if (existing) {
    if (!Owned(*existing)) return NotOwned("pods", ObjectName(ctx_, spec.name));
    const json& meta = (*existing)["metadata"];
    if (meta.contains("deletionTimestamp")) {
      return Status::FailedPrecondition(fmt::format("pod {} is still terminating", spec.name));
    }
    if (meta.value("annotations", json::object()).value(kPodSpecAnnotation, "") == wanted_spec) return Status::Ok();
    return Status::Errorf("pod {} exists with a different spec; delete it first", spec.name);
  }
  // The pods' stable names (hostname.subdomain) need the hosts Service; made with the first pod.
  if (!hosts_service_ready_) {
    RETURN_IF_ERROR(Upsert("services", HostsServiceObject(ctx_)));
    hosts_service_ready_ = true;
  }
  ASSIGN_OR_RETURN(MountedObjects mounted, MountedFor(spec));
  ASSIGN_OR_RETURN(json pod, PodObject(spec, mounted, ctx_));
  pod["metadata"]["annotations"][kPodSpecAnnotation] = wanted_spec;
  auto created = api_->Post(fmt::format("/api/v1/namespaces/{}/pods", ctx_.namespace_name), pod);
  Observe("pods", created);
  if (created.ok()) return Status::Ok();
  if (created.status().code() != StatusCode::kAlreadyExists) return created.status();
  // Created by an earlier attempt whose answer was lost (or not yet in the cache): the same
  // spec is success.
  ASSIGN_OR_RETURN(auto now, PodSpecOf(spec.name, /*fresh=*/true));
  if (now && *now == spec) return Status::Ok();
  return Status::Errorf("pod {} exists with a different spec; delete it first", spec.name);
}

Status KubernetesRuntime::DeletePod(const std::string& name) { return DeleteObject("pods", name); }

// What `kubectl delete --force --grace-period=0` does: the API server removes the pod at once,
// without the kubelet's confirmation that its containers ended.
Status KubernetesRuntime::ForgetPod(const std::string& name) {
  return DeleteObject("pods", name, "?gracePeriodSeconds=0");
}

PodStatus KubernetesRuntime::StatusOf(const json& pod) const {
  const json& meta = Member(pod, "metadata");
  const json& uid = Member(meta, "uid");
  const json& version = Member(meta, "resourceVersion");
  if (!uid.is_string() || !version.is_string()) return ParseStatus(pod);
  const std::string& key = uid.get_ref<const std::string&>();
  {
    std::lock_guard<std::mutex> lock(summaries_mu_);
    auto held = statuses_.find(key);
    if (held != statuses_.end() && held->second.resource_version == version.get_ref<const std::string&>())
      return held->second.status;
  }
  PodStatus st = ParseStatus(pod);
  std::lock_guard<std::mutex> lock(summaries_mu_);
  // Bounded as the summaries are: forgetting all at once costs one read of each pod still there.
  if (statuses_.size() >= 4096) statuses_.clear();
  statuses_[key] = {version.get<std::string>(), st};
  return st;
}

PodStatus KubernetesRuntime::ParseStatus(const json& pod) const {
  // Read in place (json_fields.h): a pod's metadata carries its whole spec.
  PodStatus st;
  const json& meta = Member(pod, "metadata");
  const json& status = Member(pod, "status");
  const json& hostname = Member(Member(pod, "spec"), "hostname");
  if (hostname.is_string()) st.name = hostname.get<std::string>();
  for (const auto& [k, v] : Member(meta, "labels").items()) {
    if (v.is_string() && k != kManagedByLabel) st.labels[k] = v.get<std::string>();
  }
  const json& phase_field = Member(status, "phase");
  const std::string phase = phase_field.is_string() ? phase_field.get<std::string>() : "Pending";
  st.phase = phase == "Running"     ? PodPhase::kRunning
             : phase == "Succeeded" ? PodPhase::kSucceeded
             : phase == "Failed"    ? PodPhase::kFailed
                                    : PodPhase::kPending;
  for (const auto& c : Member(status, "conditions")) {
    if (c.value("type", "") == "Ready") st.ready = c.value("status", "") == "True";
  }
  const json& ip = Member(status, "podIP");
  if (ip.is_string()) st.ip = ip.get<std::string>();
  // Init containers first (the prepare step, the munged sidecar): while one fails, the pod's
  // own containers only wait "PodInitializing", which says nothing.
  for (const auto& c : Member(status, "initContainerStatuses")) {
    st.restarts += c.value("restartCount", 0);
    if (!st.message.empty() || !c.contains("state")) continue;
    const json& state = c["state"];
    const std::string who = "init container " + c.value("name", "");
    if (state.contains("waiting") && state["waiting"].value("reason", "") != "PodInitializing") {
      const json& w = state["waiting"];
      std::string why = w.value("reason", "") + (w.contains("message") ? ": " + w.value("message", "") : "");
      // CrashLoopBackOff names no cause: the last run's exit does.
      const json& last = Member(Member(c, "lastState"), "terminated");
      if (last.is_object() && !last.empty())
        why += fmt::format(" (last exit {} {})", last.value("exitCode", 0), last.value("reason", ""));
      st.message = who + ": " + why;
    } else if (state.contains("terminated") && state["terminated"].value("exitCode", 0) != 0) {
      const json& t = state["terminated"];
      st.message = fmt::format("{}: exit {} {}", who, t.value("exitCode", 0), t.value("reason", ""));
    }
  }
  for (const auto& c : Member(status, "containerStatuses")) {
    st.restarts += c.value("restartCount", 0);
    if (st.message.empty() && c.contains("state") && c["state"].contains("waiting") &&
        c["state"]["waiting"].value("reason", "") != "PodInitializing") {
      const json& w = c["state"]["waiting"];
      st.message = w.value("reason", "") + (w.contains("message") ? ": " + w.value("message", "") : "");
    }
  }
  if (status.contains("message")) st.message = status.value("message", "");
  if (meta.contains("deletionTimestamp")) {
    st.message = "terminating";
    st.delete_by = std::max<int64_t>(1, ParseTime(meta.value("deletionTimestamp", "")));
  }
  const json& started = Member(status, "startTime");
  st.started_at = ParseTime(started.is_string() ? started.get<std::string>() : "");
  const SpecSummary summary = SummaryOf(meta);
  st.resources = summary.resources;
  st.image = summary.image;
  if (st.name.empty()) st.name = summary.name;
  return st;  // the kubelet enforces requests and limits: not_enforced stays empty
}

KubernetesRuntime::SpecSummary KubernetesRuntime::SummaryOf(const json& meta) const {
  const json& uid_field = Member(meta, "uid");
  const std::string uid = uid_field.is_string() ? uid_field.get<std::string>() : "";
  {
    std::lock_guard<std::mutex> lock(summaries_mu_);
    auto held = summaries_.find(uid);
    if (!uid.empty() && held != summaries_.end()) return held->second;
  }
  SpecSummary summary;
  const json& spec_json = Member(Member(meta, "annotations"), kPodSpecAnnotation);
  auto spec = SpecFromJson(spec_json.is_string() ? json::parse(spec_json.get_ref<const std::string&>(), nullptr, false)
                                                 : json());
  if (spec.ok()) summary = {spec->resources, spec->name, spec->image};
  if (uid.empty()) return summary;
  std::lock_guard<std::mutex> lock(summaries_mu_);
  // Bounded: pods come and go; forgetting all at once costs one parse of each pod still there.
  if (summaries_.size() >= 4096) summaries_.clear();
  summaries_[uid] = summary;
  return summary;
}

Result<std::vector<PodStatus>> KubernetesRuntime::ListPods(const std::map<std::string, std::string>& selector) {
  std::vector<PodStatus> out;
  if (ObjectCache* cache = caches_.Synced("pods")) {
    std::map<std::string, std::string> wanted = selector;
    wanted[kManagedByLabel] = kManagedBy;
    wanted[kLabelCluster] = ctx_.cluster;
    // In place: a pass lists pods several times, and copying each pod's JSON was most of an idle
    // operator's work with a hundred of them.
    cache->ForEach(ctx_.namespace_name, wanted, [&](const json& pod) { out.push_back(StatusOf(pod)); });
    return out;
  }
  std::string labels = fmt::format("{}={},{}={}", kManagedByLabel, kManagedBy, kLabelCluster, ctx_.cluster);
  for (const auto& [k, v] : selector) labels += fmt::format(",{}={}", k, v);
  ASSIGN_OR_RETURN(json list, api_->Get(fmt::format("/api/v1/namespaces/{}/pods?labelSelector={}", ctx_.namespace_name,
                                                    QueryEscape(labels))));
  for (const auto& pod : list.value("items", json::array())) out.push_back(StatusOf(pod));
  return out;
}

Result<std::optional<PodSpec>> KubernetesRuntime::GetPodSpec(const std::string& name) {
  return PodSpecOf(name, /*fresh=*/false);
}

Result<std::optional<PodSpec>> KubernetesRuntime::PodSpecOf(const std::string& name, bool fresh) {
  ASSIGN_OR_RETURN(auto pod, GetObject("pods", name, fresh));
  if (!pod) return std::optional<PodSpec>();
  if (!Owned(*pod)) return NotOwned("pods", ObjectName(ctx_, name));
  const std::string spec_json = (*pod)["metadata"].value("annotations", json::object()).value(kPodSpecAnnotation, "");
  auto j = json::parse(spec_json, nullptr, false);
  if (j.is_discarded())
    return Status::Internal(fmt::format("pod {}: no readable {} annotation", name, kPodSpecAnnotation));
  ASSIGN_OR_RETURN(PodSpec spec, SpecFromJson(j));
  return std::optional<PodSpec>(std::move(spec));
}

Result<PodExecRequest> KubernetesRuntime::ExecRequest(const std::string& pod, const ExecOptions& opts) {
  ASSIGN_OR_RETURN(auto spec, GetPodSpec(pod));
  if (!spec) return Status::NotFound(fmt::format("pod {} not found", pod));
  if (opts.argv.empty()) return Status::InvalidArgument("", "exec: no command given");
  PodExecRequest r;
  r.namespace_name = ctx_.namespace_name;
  r.pod = ObjectName(ctx_, pod);
  auto component = spec->labels.find("hpcplane.io/component");
  r.container = component == spec->labels.end() ? "main" : component->second;
  // pods/exec runs as the container's user with the container's environment; the user asked for
  // is entered inside the pod, as the local runtime does, which needs a container run as root.
  r.argv = {"env", "--chdir=" + (opts.working_dir.empty() ? std::string("/") : opts.working_dir)};
  const bool as_root = opts.user.empty() || opts.user == "root";
  if (!as_root && spec->uid != 0 && opts.uid == spec->uid) {
    // The container runs as that user already.
    r.argv.insert(r.argv.end(), {"USER=" + opts.user, "LOGNAME=" + opts.user, "HOME=/tmp"});
  } else if (!as_root) {
    if (spec->uid != 0) {
      return Status::FailedPrecondition(
          fmt::format("pod {}: cannot exec as {}: its container runs as uid {}, not root", pod, opts.user, spec->uid));
    }
    r.argv = {"setpriv",
              "--reuid=" + opts.user,
              "--regid=" + opts.user,
              "--init-groups",
              "--",
              "env",
              "--chdir=" + (opts.working_dir.empty() ? std::string("/") : opts.working_dir),
              "USER=" + opts.user,
              "LOGNAME=" + opts.user,
              "HOME=/tmp"};
  }
  for (const auto& [k, v] : opts.env) r.argv.push_back(k + "=" + v);
  r.argv.insert(r.argv.end(), opts.argv.begin(), opts.argv.end());
  r.stdin_data = opts.stdin_data;
  r.timeout = opts.timeout;
  return r;
}

Result<ProcessResult> KubernetesRuntime::Exec(const std::string& pod, const ExecOptions& opts) {
  ASSIGN_OR_RETURN(PodExecRequest r, ExecRequest(pod, opts));
  return ExecInPod(*api_, r);
}

Result<int> KubernetesRuntime::ExecInteractive(const std::string& pod, const ExecOptions& opts) {
  // A terminal session is kubectl's (`kubectl exec -it`); here the command runs to its end and
  // its output is passed on.
  ASSIGN_OR_RETURN(ProcessResult r, Exec(pod, opts));
  fwrite(r.out.data(), 1, r.out.size(), stdout);
  fwrite(r.err.data(), 1, r.err.size(), stderr);
  if (r.timed_out) return Status::Unavailable(fmt::format("pod {}: exec timed out", pod));
  return r.exit_code;
}

Result<std::string> KubernetesRuntime::Logs(const std::string& pod, size_t tail_lines) {
  ASSIGN_OR_RETURN(auto spec, GetPodSpec(pod));
  if (!spec) return Status::NotFound(fmt::format("pod {} not found", pod));
  std::string path = Path("pods", pod) + "/log";
  auto component = spec->labels.find("hpcplane.io/component");
  path += "?container=" + QueryEscape(component == spec->labels.end() ? "main" : component->second);
  if (tail_lines > 0) path += fmt::format("&tailLines={}", tail_lines);
  return api_->GetText(path);
}

SupervisionResult KubernetesRuntime::Supervise() {
  SupervisionResult r;
  auto pods = ListPods({});
  if (!pods.ok()) {
    r.settled = false;  // cannot see: claim nothing
    return r;
  }
  std::map<std::string, std::string> seen;
  for (const auto& p : *pods) {
    seen[p.name] = fmt::format("{}/{}/{}", PodPhaseName(p.phase), p.ready, p.restarts);
    const bool done = p.phase == PodPhase::kSucceeded || p.phase == PodPhase::kFailed;
    if (!(p.phase == PodPhase::kRunning && p.ready) && !done) r.settled = false;
  }
  std::lock_guard<std::mutex> lock(mu_);
  r.changed = seen != last_seen_;
  last_seen_ = std::move(seen);
  return r;
}

Status KubernetesRuntime::Teardown() {
  ASSIGN_OR_RETURN(auto pods, ListPods({}));
  Status first = Status::Ok();
  for (const auto& p : pods) {
    Status s = DeletePod(p.name);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

}  // namespace hpc::runtime::kubernetes
