// The operator's resources on Kubernetes: one SlurmCluster custom resource and the NodeSets and
// Workspaces that name it, in one namespace, read through the API; status written to their status
// subresources (only when it changed, so the operator's own writes do not wake it forever).
// Specs are decoded and validated by the same decoder as `hpcplane up -f`: a resource the CRD
// schema admits but validation refuses is reported, with its field path, instead of acted on.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "operator/reconcile_store.h"
#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/informer.h"

namespace hpc::kube {

inline constexpr const char* kCustomResourcePath = "/apis/hpcplane.io/v1alpha1";
// Put on each Workspace before anything is made for it, and taken off once it is stopped and
// all of it is gone, so that `kubectl delete workspace` stops it first (its login pod, token,
// workers and partition are the SlurmCluster's, not the Workspace's, so no ownerReference
// would remove them).
inline constexpr const char* kWorkspaceFinalizer = "hpcplane.io/workspace";
bool HasWorkspaceFinalizer(const nlohmann::json& workspace);

// A custom resource's spec through the manifest decoder: kind, name, labels, generation and
// spec only (the API's own metadata is not the user's input).
Result<api::Manifest> DecodeCustomResource(const nlohmann::json& resource);
// A Workspace resource's spec through the same decoder, with its status; its
// metadata.namespace_ is its cluster's name, as in the operator's store.
Result<api::Workspace> DecodeWorkspaceResource(const nlohmann::json& resource, const std::string& namespace_name);
// A list's or watch's item with its apiVersion and kind (`plural`: slurmclusters, nodesets or
// workspaces), which list items may omit and the decoder and a PUT need.
nlohmann::json WithKind(nlohmann::json object, const std::string& plural);

class KubernetesStore : public op::ReconcileStore {
 public:
  KubernetesStore(std::shared_ptr<runtime::kubernetes::ApiClient> api, std::string namespace_name, std::string cluster);

  Result<api::SlurmCluster> LoadCluster() const override;
  Result<std::vector<api::NodeSet>> LoadNodeSets() const override;
  // The Workspaces that name the cluster. Each one's nodeset status is kept in its own status
  // (`status.nodeset`), as no NodeSet resource exists for it. One the decoder or validation
  // refuses gets phase Invalid with the reason, and nothing is made for it. One marked Stopped
  // (DeleteWorkspace) holds nothing any more and is skipped. Each one gets kWorkspaceFinalizer
  // before it is acted on; one being deleted is stopped (as with spec.stopping).
  Result<std::vector<api::Workspace>> LoadWorkspaces() const override;
  api::NodeSetStatus LoadNodeSetStatus(const std::string& name) const override;
  Status SaveClusterStatus(const api::SlurmClusterStatus& s) const override;
  Status SaveNodeSetStatus(const std::string& name, const api::NodeSetStatus& s) const override;
  Status SaveWorkspaceStatus(const std::string& name, const api::WorkspaceStatus& s) const override;
  // Marks it Stopped and takes the finalizer off: a deletion waiting for it goes through.
  Status DeleteWorkspace(const std::string& name) const override;
  // The SlurmCluster is gone, and with it (garbage collected) everything its workspaces had:
  // their finalizers come off, so that deleting them does not wait for nothing.
  Status ReleaseWorkspaces() const;

  // Reads the custom resources from these informers' caches (slurmclusters, nodesets,
  // workspaces), each once it has listed; status writes go to the API and into the cache.
  void UseCaches(runtime::kubernetes::Caches caches) { caches_ = std::move(caches); }

  // What else an environment a NodeSet or Workspace names (spec.environment) must meet on this
  // data plane besides the API's validation (an image here): one that does not is Invalid with
  // the reason, as one the validation refuses.
  using EnvironmentCheck = std::function<Status(const std::string& environment)>;
  void CheckEnvironmentsWith(EnvironmentCheck check) { environment_check_ = std::move(check); }

  std::set<std::string> RefusedNodeSets() const override;

  // The uid of the SlurmCluster last loaded (its objects' owner).
  std::string cluster_uid() const;
  // Posts a NodeSet's status events that are new since its last status as Kubernetes Events, so
  // `kubectl describe nodeset` and `kubectl get events` show the autoscaler's decisions.
  void RecordEvents(const std::string& nodeset, const api::NodeSetStatus& s) const;
  // Writes `status` to a resource's status subresource when it differs from what it holds.
  Status WriteStatus(const std::string& plural, const std::string& name, const nlohmann::json& status) const;

 private:
  std::string Path(const std::string& plural, const std::string& name = "") const;
  // One resource, or every one of a kind in the namespace: from the cache when it has listed.
  Result<nlohmann::json> GetResource(const std::string& plural, const std::string& name, bool fresh) const;
  Result<nlohmann::json> ListResources(const std::string& plural) const;
  Status SetWorkspaceFinalizer(const std::string& name, bool present) const;
  // A write's answer, into the cache (if any), so that the next pass sees it.
  void Observe(const std::string& plural, const Result<nlohmann::json>& written) const;

  std::shared_ptr<runtime::kubernetes::ApiClient> api_;
  std::string namespace_;
  std::string cluster_;
  runtime::kubernetes::Caches caches_;
  mutable std::mutex mu_;
  mutable std::string cluster_uid_;
  mutable std::optional<api::SlurmCluster> last_cluster_;      // decoded by the last LoadCluster
  mutable std::map<std::string, nlohmann::json> last_status_;  // "plural/name" -> status held
  mutable std::map<std::string, std::string> nodeset_uids_;    // name -> uid, for their Events
  mutable std::set<std::string> workspaces_;                   // names of the last loaded
  EnvironmentCheck environment_check_;
  // A NodeSet refused now goes on as it last was valid (its workers kept, its partition too),
  // Invalid until mended; one never seen valid is only named in refused_nodesets_.
  mutable std::map<std::string, api::NodeSet> last_valid_nodesets_;
  mutable std::set<std::string> refused_nodesets_;
  mutable std::map<std::string, nlohmann::json> workspace_nodesets_;  // name -> nodeset status
};

}  // namespace hpc::kube
