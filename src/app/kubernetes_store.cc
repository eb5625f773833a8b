#include "app/kubernetes_store.h"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/codec.h"
#include "api/validation.h"
#include "operator/conditions.h"

namespace hpc::app {

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

KubernetesStore::KubernetesStore(std::shared_ptr<runtime::kubernetes::ApiClient> api, std::string namespace_name,
                                 std::string cluster)
    : api_(std::move(api)), namespace_(std::move(namespace_name)), cluster_(std::move(cluster)) {}

std::string KubernetesStore::Path(const std::string& plural, const std::string& name) const {
  std::string p = fmt::format("{}/namespaces/{}/{}", kCustomResourcePath, namespace_, plural);
  return name.empty() ? p : p + "/" + name;
}

std::string KubernetesStore::cluster_uid() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cluster_uid_;
}

Result<api::SlurmCluster> KubernetesStore::LoadCluster() const {
  ASSIGN_OR_RETURN(json cr, api_->Get(Path("slurmclusters", cluster_)));
  {
    std::lock_guard<std::mutex> lock(mu_);
    cluster_uid_ = cr["metadata"].value("uid", "");
    last_status_["slurmclusters/" + cluster_] = cr.value("status", json::object());
  }
  ASSIGN_OR_RETURN(api::Manifest m, DecodeCustomResource(cr));
  api::SlurmCluster c = m.clusters.at(0);
  c.metadata.namespace_ = namespace_;
  c.status = api::ClusterStatusFromJson(cr.value("status", json::object()));
  std::lock_guard<std::mutex> lock(mu_);
  last_cluster_ = c;
  return c;
}

Result<std::vector<api::NodeSet>> KubernetesStore::LoadNodeSets() const {
  ASSIGN_OR_RETURN(json list, api_->Get(Path("nodesets")));
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
  for (const auto& item : list.value("items", json::array())) {
    const json spec = item.value("spec", json::object());
    if (spec.value("cluster", "") != cluster_) continue;
    const std::string name = item["metadata"].value("name", "");
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_status_["nodesets/" + name] = item.value("status", json::object());
      nodeset_uids_[name] = item["metadata"].value("uid", "");
    }
    auto m = DecodeCustomResource(item);
    Status valid = m.ok() ? api::ValidateAgainstCluster(m->nodesets.at(0), *cluster) : m.status();
    if (!valid.ok()) {
      // Refused as a whole, and said where: the other nodesets go on.
      spdlog::warn("nodeset {}: {}", name, valid.message());
      api::NodeSetStatus st = api::NodeSetStatusFromJson(item.value("status", json::object()));
      op::SetCondition(&st.conditions, "Invalid", true, "InvalidSpec", valid.message());
      op::SetCondition(&st.conditions, "Ready", false, "InvalidSpec", valid.message());
      (void)SaveNodeSetStatus(name, st);
      continue;
    }
    api::NodeSet ns = m->nodesets.at(0);
    ns.status = api::NodeSetStatusFromJson(item.value("status", json::object()));
    out.push_back(std::move(ns));
  }
  return out;
}

Result<std::vector<api::Workspace>> KubernetesStore::LoadWorkspaces() const { return std::vector<api::Workspace>(); }

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
    ASSIGN_OR_RETURN(json object, api_->Get(Path(plural, name)));
    object["status"] = status;
    auto r = api_->Put(Path(plural, name) + "/status", object);
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

Status KubernetesStore::SaveWorkspaceStatus(const std::string&, const api::WorkspaceStatus&) const {
  return Status::Ok();
}

Status KubernetesStore::DeleteWorkspace(const std::string&) const { return Status::Ok(); }

}  // namespace hpc::app
