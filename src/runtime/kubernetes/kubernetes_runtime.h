// The runtime interface over the Kubernetes API: config maps, secrets, volumes and pods of one
// SlurmCluster become ConfigMaps, Secrets, PersistentVolumeClaims and Pods in its namespace
// (objects.h says how), owned by the SlurmCluster so that deleting it removes them all.
// The kubelet runs the pods: Supervise only reports what changed, Teardown deletes the pods.
//
// An object of the same name that hpcplane did not make (no managed-by and cluster labels) is
// never replaced or deleted: the call fails and says so.
//
// With informers (UseCaches), reads come from their caches: a pass costs no GET of an object
// that did not change. A write's precondition is never taken from a cache alone (informer.h).
//
// Writes are idempotent and safe against a concurrent writer: an update carries the
// resourceVersion it read and is retried on 409 Conflict with a fresh read. The spec each pod
// was created from is kept in an annotation, so a restarted operator compares specs exactly
// and never replaces a pod that already runs what it wants.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/exec_stream.h"
#include "runtime/kubernetes/informer.h"
#include "runtime/kubernetes/objects.h"
#include "runtime/pod_runtime.h"

namespace hpc::runtime::kubernetes {

inline constexpr const char* kPodSpecAnnotation = "hpcplane.io/pod-spec";

class KubernetesRuntime : public PodRuntime, public RuntimeLifecycle {
 public:
  KubernetesRuntime(std::shared_ptr<ApiClient> api, ObjectContext ctx);

  Status ApplyConfigMap(const ConfigMap& cm) override;
  Result<std::optional<ConfigMap>> GetConfigMap(const std::string& name) override;
  Status DeleteConfigMap(const std::string& name) override;
  Status ApplyNetworkPolicy(const NetworkPolicy& policy) override;
  Result<std::optional<NetworkPolicy>> GetNetworkPolicy(const std::string& name) override;
  Status DeleteNetworkPolicy(const std::string& name) override;
  Status ApplySecret(const Secret& secret) override;
  Result<std::optional<Secret>> GetSecret(const std::string& name) override;
  Status DeleteSecret(const std::string& name) override;
  Status EnsureVolume(const Volume& volume) override;
  Status CreatePod(const PodSpec& spec) override;
  Status DeletePod(const std::string& name) override;
  Status ForgetPod(const std::string& name) override;
  Result<std::vector<PodStatus>> ListPods(const std::map<std::string, std::string>& selector = {}) override;
  Result<std::optional<PodSpec>> GetPodSpec(const std::string& name) override;
  Result<ProcessResult> Exec(const std::string& pod, const ExecOptions& opts) override;
  Result<int> ExecInteractive(const std::string& pod, const ExecOptions& opts) override;
  Result<std::string> Logs(const std::string& pod, size_t tail_lines) override;

  SupervisionResult Supervise() override;
  Status Teardown() override;

  const ObjectContext& context() const { return ctx_; }
  // The pods/exec request that runs `opts` in `pod` (its container, the user entered inside it,
  // the environment and directory), for a caller that streams it itself (ExecAttached).
  Result<PodExecRequest> ExecRequest(const std::string& pod, const ExecOptions& opts);
  // Reads pods, config maps, secrets, services and claims from these informers' caches (each
  // one used once it has listed). The informers outlive the runtime.
  void UseCaches(Caches caches) { caches_ = std::move(caches); }

 private:
  std::string CollectionPath(const std::string& plural) const;
  std::string Path(const std::string& plural, const std::string& name = "") const;
  // Creates the object, or replaces it keeping its resourceVersion; retried on conflicts.
  Status Upsert(const std::string& plural, const nlohmann::json& object);
  // From the cache when there is one and `fresh` is not asked for.
  Result<std::optional<nlohmann::json>> GetObject(const std::string& plural, const std::string& name,
                                                  bool fresh = false);
  // A write's answer, into the cache (if any) so that the next read sees it.
  void Observe(const std::string& plural, const Result<nlohmann::json>& written);
  Result<std::optional<PodSpec>> PodSpecOf(const std::string& name, bool fresh);
  // Deletes only what hpcplane made for this cluster; absent is done.
  // `query`: DeleteOptions as parameters, e.g. "?gracePeriodSeconds=0".
  Status DeleteObject(const std::string& plural, const std::string& name, const std::string& query = "");
  // hpcplane's and this cluster's (by its labels): the only objects it replaces or deletes.
  bool Owned(const nlohmann::json& object) const;
  Status NotOwned(const std::string& plural, const std::string& object_name) const;
  // The secrets, volumes and config map modes a pod's mounts refer to, read once and kept.
  Result<MountedObjects> MountedFor(const PodSpec& spec);
  // A pod's status, read once per resourceVersion: a pass lists the cluster's pods a dozen times
  // (each nodeset, the supervision, the cluster), and with 1,000 workers reading every pod each
  // time was most of a pass (bench/README.md, "Operator at 1,000 workers").
  PodStatus StatusOf(const nlohmann::json& pod) const;
  PodStatus ParseStatus(const nlohmann::json& pod) const;
  struct ReadStatus {
    std::string resource_version;
    PodStatus status;
  };
  // What a pod's spec annotation says that its status carries (its resources and name), by the
  // pod's uid: the annotation never changes for one pod, and parsing it on every list was an
  // idle operator's main work with a hundred pods.
  struct SpecSummary {
    runtime::Resources resources;
    std::string name;
    std::string image;
  };
  SpecSummary SummaryOf(const nlohmann::json& meta) const;
  mutable std::mutex summaries_mu_;
  mutable std::map<std::string, SpecSummary> summaries_;
  mutable std::map<std::string, ReadStatus> statuses_;  // by uid, under summaries_mu_

  std::shared_ptr<ApiClient> api_;
  ObjectContext ctx_;
  Caches caches_;
  std::mutex mu_;
  MountedObjects known_;
  std::map<std::string, std::string> last_seen_;  // pod -> what Supervise saw of it
  std::atomic<bool> hosts_service_ready_{false};
};

}  // namespace hpc::runtime::kubernetes
