#include "kubernetes/kubernetes_store.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/codec.h"
#include "api/validation.h"
#include "operator/conditions.h"
#include "operator/workspace.h"

namespace hpc::kube {

using nlohmann::json;

Result<api::Manifest> DecodeCustomResource(const json& resource) {
  const json meta = resource.value("metadata", json::object());
  json doc = {{"apiVersion", resource.value("apiVersion", "")},
              {"kind", resource.value("kind", "")},
              {"metadata", {{"name", meta.value("name", "")}, {"generation", meta.value("generation", 1)}}},
              {"spec", resource.value("spec", json::object())}};
  if (meta.contains("labels")) doc["metadata"]["labels"] = meta["labels"];
  return api::DecodeManifest(doc.dump(), fmt::format("{} {}", resource.value("kind", ""), meta.value("name", "")));
}

Result<api::Workspace> DecodeWorkspaceResource(const json& resource, const std::string& namespace_name) {
  const json meta = resource.value("metadata", json::object());
  const std::string name = meta.value("name", "");
  json doc = {{"apiVersion", resource.value("apiVersion", "")},
              {"kind", resource.value("kind", "")},
              {"metadata", {{"name", name}, {"generation", meta.value("generation", int64_t{1})}}},
              {"spec", resource.value("spec", json::object())}};
  ASSIGN_OR_RETURN(api::Workspace w,
                   api::DecodeWorkspace(doc.dump(), fmt::format("Workspace {}/{}", namespace_name, name)));
  w.metadata.namespace_ = w.spec.cluster;
  w.status = op::WorkspaceStatusFromJson(resource.value("status", json::object()));
  return w;
}

KubernetesStore::KubernetesStore(std::shared_ptr<runtime::kubernetes::ApiClient> api, std::string namespace_name,
                                 std::string cluster)
    : api_(std::move(api)), namespace_(std::move(namespace_name)), cluster_(std::move(cluster)) {}

std::string KubernetesStore::Path(const std::string& plural, const std::string& name) const {
  std::string p = fmt::format("{}/namespaces/{}/{}", kCustomResourcePath, namespace_, plural);
  return name.empty() ? p : p + "/" + name;
}

json WithKind(json object, const std::string& plural) {
  static const std::map<std::string, std::string> kinds = {
      {"slurmclusters", "SlurmCluster"}, {"nodesets", "NodeSet"}, {"workspaces", "Workspace"}};
  if (!object.contains("kind")) object["kind"] = kinds.at(plural);
  if (!object.contains("apiVersion")) object["apiVersion"] = "hpcplane.io/v1alpha1";
  return object;
}

void KubernetesStore::Observe(const std::string& plural, const Result<json>& written) const {
  if (auto* cache = caches_.Synced(plural); cache && written.ok()) cache->Observe(*written);
}

bool HasWorkspaceFinalizer(const json& workspace) {
  for (const auto& f : workspace.value("metadata", json::object()).value("finalizers", json::array())) {
    if (f == kWorkspaceFinalizer) return true;
  }
  return false;
}

Status KubernetesStore::SetWorkspaceFinalizer(const std::string& name, bool present) const {
  Status last = Status::Ok();
  for (int attempt = 0; attempt < 5; ++attempt) {
    auto object = GetResource("workspaces", name, /*fresh=*/attempt > 0);
    if (!object.ok() && object.status().code() == StatusCode::kNotFound) return Status::Ok();
    if (!object.ok()) return object.status();
    if (HasWorkspaceFinalizer(*object) == present) return Status::Ok();
    json finalizers = json::array();
    for (const auto& f : (*object)["metadata"].value("finalizers", json::array())) {
      if (f != kWorkspaceFinalizer) finalizers.push_back(f);
    }
    if (present) finalizers.push_back(kWorkspaceFinalizer);
    (*object)["metadata"]["finalizers"] = finalizers;
    auto r = api_->Put(Path("workspaces", name), *object);
    Observe("workspaces", r);
    if (r.ok() || r.status().code() == StatusCode::kNotFound) return Status::Ok();
    last = r.status();
    if (last.code() != StatusCode::kConflict) return last;
  }
  return last;
}

Status KubernetesStore::ReleaseWorkspaces() const {
  ASSIGN_OR_RETURN(json items, ListResources("workspaces"));
  Status first = Status::Ok();
  for (const auto& item : items) {
    if (item.value("spec", json::object()).value("cluster", "") != cluster_ || !HasWorkspaceFinalizer(item)) continue;
    Status s = SetWorkspaceFinalizer(item["metadata"].value("name", ""), false);
    if (!s.ok() && first.ok()) first = s;
  }
  return first;
}

Result<json> KubernetesStore::GetResource(const std::string& plural, const std::string& name, bool fresh) const {
  if (auto* cache = caches_.Synced(plural); cache && !fresh) {
    auto held = cache->Get(namespace_, name);
    if (!held) return Status::NotFound(fmt::format("{} {}/{} not found", plural, namespace_, name));
    return WithKind(std::move(*held), plural);
  }
  ASSIGN_OR_RETURN(json object, api_->Get(Path(plural, name)));
  return WithKind(std::move(object), plural);
}

Result<json> KubernetesStore::ListResources(const std::string& plural) const {
  json items = json::array();
  if (auto* cache = caches_.Synced(plural)) {
    for (auto& item : cache->List(namespace_)) items.push_back(WithKind(std::move(item), plural));
    return items;
  }
  ASSIGN_OR_RETURN(json list, api_->Get(Path(plural)));
  for (auto& item : list.value("items", json::array())) items.push_back(WithKind(std::move(item), plural));
  return items;
}

std::string KubernetesStore::cluster_uid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cluster_uid_;
}

namespace {

// A resource that is valid again: an Invalid condition said earlier turns False. Whether it did.
bool EndRefusal(std::vector<api::Condition>* conditions) {
  const api::Condition* invalid = op::FindCondition(*conditions, "Invalid");
  if (!invalid || invalid->status != "True") return false;
  op::SetCondition(conditions, "Invalid", false, "Valid", "");
  return true;
}

}  // namespace

Result<api::SlurmCluster> KubernetesStore::LoadCluster() const {
  ASSIGN_OR_RETURN(json cr, GetResource("slurmclusters", cluster_, /*fresh=*/false));
  {
    std::lock_guard<std::mutex> lock(mu_);
    cluster_uid_ = cr["metadata"].value("uid", "");
    last_status_["slurmclusters/" + cluster_] = cr.value("status", json::object());
  }
  ASSIGN_OR_RETURN(api::Manifest m, DecodeCustomResource(cr));
  api::SlurmCluster c = m.clusters.at(0);
  c.metadata.namespace_ = namespace_;
  c.status = api::ClusterStatusFromJson(cr.value("status", json::object()));
  // Loaded for a pass, so valid (the operator refuses before one): a refusal said earlier is over.
  EndRefusal(&c.status.conditions);
  std::lock_guard<std::mutex> lock(mu_);
  last_cluster_ = c;
  return c;
}

Result<std::vector<api::NodeSet>> KubernetesStore::LoadNodeSets() const {
  ASSIGN_OR_RETURN(json items, ListResources("nodesets"));
  // The cluster the pass just loaded; read it only when this is called first.
  std::optional<api::SlurmCluster> cluster;
  {
    std::lock_guard<std::mutex> lock(mu_);
    cluster = last_cluster_;
  }
  if (!cluster) {
    ASSIGN_OR_RETURN(api::SlurmCluster c, LoadCluster());
    cluster = std::move(c);
  }
  std::vector<api::NodeSet> out;
  std::set<std::string> present, refused;
  for (const auto& item : items) {
    const json spec = item.value("spec", json::object());
    if (spec.value("cluster", "") != cluster_) continue;
    const std::string name = item["metadata"].value("name", "");
    present.insert(name);
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_status_["nodesets/" + name] = item.value("status", json::object());
      nodeset_uids_[name] = item["metadata"].value("uid", "");
    }
    auto m = DecodeCustomResource(item);
    Status valid = m.ok() ? api::ValidateAgainstCluster(m->nodesets.at(0), *cluster) : m.status();
    if (valid.ok() && environment_check_ && !m->nodesets.at(0).spec.environment.empty()) {
      valid = environment_check_(m->nodesets.at(0).spec.environment);
    }
    api::NodeSetStatus st = api::NodeSetStatusFromJson(item.value("status", json::object()));
    if (!valid.ok()) {
      // Refused as a whole, and said where: the other nodesets go on, and this one as it last
      // was valid (an edit that cannot be honoured must not drain and delete its workers).
      spdlog::warn("nodeset {}: {}", name, valid.message());
      op::SetCondition(&st.conditions, "Invalid", true, "InvalidSpec", valid.message());
      op::SetCondition(&st.conditions, "Ready", false, "InvalidSpec", valid.message());
      (void)SaveNodeSetStatus(name, st);
      std::lock_guard<std::mutex> lock(mu_);
      auto held = last_valid_nodesets_.find(name);
      if (held == last_valid_nodesets_.end()) {
        refused.insert(name);
        continue;
      }
      api::NodeSet ns = held->second;
      ns.status = st;
      out.push_back(std::move(ns));
      continue;
    }
    // Valid again: a refusal said earlier is over (said now: a pass writes a nodeset's status
    // only once Slurm runs).
    if (EndRefusal(&st.conditions)) (void)SaveNodeSetStatus(name, st);
    api::NodeSet ns = m->nodesets.at(0);
    ns.status = st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_valid_nodesets_[name] = ns;
    }
    out.push_back(std::move(ns));
  }
  // A deleted NodeSet's name is free again (a workspace may take it).
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(nodeset_uids_, [&](const auto& entry) { return !present.count(entry.first); });
  std::erase_if(last_valid_nodesets_, [&](const auto& entry) { return !present.count(entry.first); });
  refused_nodesets_ = std::move(refused);
  return out;
}

std::set<std::string> KubernetesStore::RefusedNodeSets() const {
  std::lock_guard<std::mutex> lock(mu_);
  return refused_nodesets_;
}

Result<std::vector<api::Workspace>> KubernetesStore::LoadWorkspaces() const {
  ASSIGN_OR_RETURN(json items, ListResources("workspaces"));
  std::vector<api::Workspace> out;
  std::set<std::string> names;
  for (const auto& item : items) {
    const json spec = item.value("spec", json::object());
    if (spec.value("cluster", "") != cluster_) continue;
    const std::string name = item["metadata"].value("name", "");
    const json status = item.value("status", json::object());
    const bool deleting = item["metadata"].contains("deletionTimestamp");
    const bool held = HasWorkspaceFinalizer(item);
    // Stopped: everything it had is gone; the resource is its owner's to delete.
    if (status.value("phase", "") == "Stopped" || (deleting && !held)) {
      if (held) (void)SetWorkspaceFinalizer(name, false);
      continue;
    }
    auto w = DecodeWorkspaceResource(item, namespace_);
    // Deleted (kubectl delete): stopped as `spec.stopping` stops it, then let go.
    if (w.ok() && deleting) w->spec.stopping = true;
    Status valid = w.ok() ? op::ValidateWorkspace(*w) : w.status();
    if (valid.ok() && environment_check_ && !w->spec.environment.empty()) {
      valid = environment_check_(w->spec.environment);
    }
    bool clashes = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      clashes = nodeset_uids_.count(name) > 0;
    }
    if (valid.ok() && clashes) {
      valid = Status::Errorf(
          "workspace \"{}\": name: a NodeSet of cluster {} has this name (both would be its "
          "partition)",
          name, cluster_);
    }
    if (!valid.ok()) {
      spdlog::warn("workspace {}: {}", name, valid.message());
      json invalid = status;
      invalid["phase"] = "Invalid";
      invalid["message"] = valid.message();
      (void)WriteStatus("workspaces", name, invalid);
      if (deleting) (void)SetWorkspaceFinalizer(name, false);  // nothing is made for an invalid one
      continue;
    }
    // Before anything is made for it: a deletion then waits until all of it is gone.
    if (!held) {
      if (Status s = SetWorkspaceFinalizer(name, true); !s.ok()) {
        spdlog::warn("workspace {}: finalizer: {}", name, s.message());
        continue;
      }
    }
    names.insert(name);
    std::lock_guard<std::mutex> lock(mu_);
    last_status_["workspaces/" + name] = status;
    // The workspace's own nodeset (its partition's workers) keeps its status in the workspace's.
    if (status.contains("nodeset")) last_status_["nodesets/" + name] = status["nodeset"];
    out.push_back(std::move(*w));
  }
  std::lock_guard<std::mutex> lock(mu_);
  workspaces_ = std::move(names);
  return out;
}

api::NodeSetStatus KubernetesStore::LoadNodeSetStatus(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = last_status_.find("nodesets/" + name);
  return it == last_status_.end() ? api::NodeSetStatus() : api::NodeSetStatusFromJson(it->second);
}

Status KubernetesStore::WriteStatus(const std::string& plural, const std::string& name, const json& status) const {
  const std::string key = plural + "/" + name;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_status_.find(key);
    if (it != last_status_.end() && it->second == status) return Status::Ok();
  }
  // The whole status replaces the old one (a merge patch would keep keys no longer set), at
  // the resourceVersion read: a concurrent spec change makes it read again.
  Status last = Status::Ok();
  for (int attempt = 0; attempt < 5; ++attempt) {
    ASSIGN_OR_RETURN(json object, GetResource(plural, name, /*fresh=*/attempt > 0));
    object["status"] = status;
    auto r = api_->Put(Path(plural, name) + "/status", object);
    Observe(plural, r);
    if (r.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      last_status_[key] = status;
      return Status::Ok();
    }
    last = r.status();
    if (last.code() != StatusCode::kConflict) return last;
  }
  return last;
}

Status KubernetesStore::SaveClusterStatus(const api::SlurmClusterStatus& s) const {
  return WriteStatus("slurmclusters", cluster_, api::StatusToJson(s));
}

Status KubernetesStore::SaveNodeSetStatus(const std::string& name, const api::NodeSetStatus& s) const {
  json status = api::StatusToJson(s);
  {
    // A workspace's nodeset is no NodeSet resource: its status goes out with the workspace's.
    std::lock_guard<std::mutex> lock(mu_);
    if (workspaces_.count(name)) {
      workspace_nodesets_[name] = status;
      return Status::Ok();
    }
  }
  // The scale subresource's labelSelectorPath: the HorizontalPodAutoscaler finds the workers by it.
  status["selector"] = fmt::format("hpcplane.io/cluster={},hpcplane.io/nodeset={}", cluster_, name);
  RecordEvents(name, s);
  return WriteStatus("nodesets", name, status);
}

void KubernetesStore::RecordEvents(const std::string& nodeset, const api::NodeSetStatus& s) const {
  std::string uid;
  json before;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = last_status_.find("nodesets/" + nodeset);
    before = it == last_status_.end() ? json::array() : it->second.value("events", json::array());
    uid = nodeset_uids_.count(nodeset) ? nodeset_uids_.at(nodeset) : "";
  }
  for (const auto& e : s.events) {
    const json seen = {{"time", e.time}, {"type", e.type}, {"reason", e.reason}, {"message", e.message}};
    if (std::find(before.begin(), before.end(), seen) != before.end()) continue;
    // One Event per decision, named as Kubernetes names them: the object, then a unique suffix.
    json event = {{"apiVersion", "v1"},
                  {"kind", "Event"},
                  {"metadata", {{"generateName", nodeset + "."}, {"namespace", namespace_}}},
                  {"involvedObject",
                   {{"apiVersion", "hpcplane.io/v1alpha1"},
                    {"kind", "NodeSet"},
                    {"name", nodeset},
                    {"namespace", namespace_},
                    {"uid", uid}}},
                  {"type", e.type},
                  {"reason", e.reason},
                  {"message", e.message},
                  {"firstTimestamp", e.time},
                  {"lastTimestamp", e.time},
                  {"count", 1},
                  {"source", {{"component", "hpcplane-operator"}}},
                  {"reportingComponent", "hpcplane.io/operator"}};
    auto r = api_->Post(fmt::format("/api/v1/namespaces/{}/events", namespace_), event);
    // Events are best effort, as in every controller: the status holds the same record.
    if (!r.ok()) spdlog::warn("nodeset {}: event: {}", nodeset, r.status().message());
  }
}

Status KubernetesStore::SaveWorkspaceStatus(const std::string& name, const api::WorkspaceStatus& s) const {
  json status = op::WorkspaceStatusJson(s);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto nodeset = workspace_nodesets_.find(name);
    if (nodeset != workspace_nodesets_.end()) {
      status["nodeset"] = nodeset->second;
    } else if (auto held = last_status_.find("nodesets/" + name); held != last_status_.end()) {
      status["nodeset"] = held->second;
    }
  }
  return WriteStatus("workspaces", name, status);
}

// Stopped, its jobs, workers, login pod and partition gone. The resource is the user's (hpcplane
// did not create it), so it is marked Stopped and left for its owner to delete.
Status KubernetesStore::DeleteWorkspace(const std::string& name) const {
  json status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto held = last_status_.find("workspaces/" + name);
    status = held == last_status_.end() ? json::object() : held->second;
  }
  status["phase"] = "Stopped";
  status["message"] = "stopped: its login pod, workers and partition are gone; delete the resource when done";
  status.erase("nodeset");
  Status s = WriteStatus("workspaces", name, status);
  // Nothing is left to clean up: a deletion (waiting for it, or to come) goes through.
  if (s.ok()) s = SetWorkspaceFinalizer(name, false);
  std::lock_guard<std::mutex> lock(mu_);
  workspaces_.erase(name);
  workspace_nodesets_.erase(name);
  last_status_.erase("nodesets/" + name);
  return s.code() == StatusCode::kNotFound ? Status::Ok() : s;
}

}  // namespace hpc::kube
