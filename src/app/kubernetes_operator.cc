#include "app/kubernetes_operator.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "app/kubernetes_store.h"
#include "app/leader_election.h"
#include "app/slurm_token_source.h"
#include "common/files.h"
#include "common/log.h"
#include "operator/accounting_sync.h"
#include "operator/cluster_reconciler.h"
#include "operator/conditions.h"
#include "operator/job_listing.h"
#include "operator/nodeset_reconciler.h"
#include "operator/ownership.h"
#include "operator/reconcile_pass.h"
#include "operator/workspace_reconciler.h"
#include "runtime/kubernetes/kubernetes_runtime.h"
#include "slurm/rest_client.h"
#include "slurm/slurm_control.h"

namespace hpc::app {

namespace k8s = runtime::kubernetes;
using nlohmann::json;

namespace {

std::atomic<bool> g_stop{false};
void OnStop(int) { g_stop = true; }

// Wakes the loop when anything it watches changes.
class Wakeup {
 public:
  void Notify() {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = true;
    cv_.notify_all();
  }
  void Wait(std::chrono::milliseconds at_most) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, at_most, [this] { return pending_ || g_stop.load(); });
    pending_ = false;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;
};

// List, then watch from the list's version; on 410 Gone list again, on a broken stream resume
// from the last version seen, on errors back off. Each event wakes the loop.
void WatchLoop(k8s::ApiClient* api, std::string path, Wakeup* wakeup) {
  std::string rv;
  auto backoff = std::chrono::milliseconds(200);
  while (!g_stop) {
    if (rv.empty()) {
      auto list = api->Get(path);
      if (!list.ok()) {
        spdlog::warn("list {}: {}", path, list.status().message());
        std::this_thread::sleep_for(backoff);
        backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
        continue;
      }
      rv = (*list)["metadata"].value("resourceVersion", "");
      wakeup->Notify();  // what changed while not watching is in the list
    }
    auto end = api->Watch(path, rv, 5, [&](const k8s::WatchEvent& e) {
      if (e.type != "BOOKMARK") wakeup->Notify();
      return !g_stop.load();
    });
    if (!end.ok()) {
      spdlog::warn("{}", end.status().message());
      std::this_thread::sleep_for(backoff);
      backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
      continue;
    }
    backoff = std::chrono::milliseconds(200);
    if (end->expired) {
      spdlog::info("watch {}: resourceVersion {} expired; listing again", path, rv);
      rv.clear();
    } else {
      rv = end->resource_version;
    }
  }
}

// A collection in one namespace, or in all of them when `ns` is empty.
std::string CollectionPath(const std::string& api, const std::string& ns, const std::string& plural) {
  return ns.empty() ? fmt::format("{}/{}", api, plural) : fmt::format("{}/namespaces/{}/{}", api, ns, plural);
}

// Everything one SlurmCluster's passes keep between them.
struct ClusterState {
  std::string uid;
  std::unique_ptr<KubernetesStore> store;
  std::unique_ptr<k8s::KubernetesRuntime> rt;
  std::unique_ptr<TokenSource> tokens;
  std::unique_ptr<slurm::ScontrolInPod> control;
  std::unique_ptr<op::ClusterReconciler> cluster_rec;
  std::unique_ptr<op::NodeSetReconciler> nodeset_rec;
  std::unique_ptr<op::WorkspaceReconciler> workspace_rec;
  std::unique_ptr<op::AccountingSync> accounting;
  std::unique_ptr<op::OwnershipLedger> ledger;
  op::JobListing listing;
};

class Operator {
 public:
  Operator(std::shared_ptr<k8s::ApiClient> api, OperatorOptions options)
      : api_(std::move(api)), options_(std::move(options)), inputs_(KubernetesBuildInputs()) {}

  void ReconcileAll() {
    auto list = api_->Get(CollectionPath(kCustomResourcePath, options_.namespace_name, "slurmclusters"));
    if (!list.ok()) {
      spdlog::warn("slurmclusters: {}", list.status().message());
      return;
    }
    std::map<std::string, std::string> present;  // namespace/name -> uid
    for (const auto& cr : (*list)["items"]) {
      const std::string ns = cr["metadata"].value("namespace", "");
      const std::string name = cr["metadata"].value("name", "");
      const std::string key = ns + "/" + name;
      const std::string uid = cr["metadata"].value("uid", "");
      auto decoded = DecodeCustomResource(cr);
      if (!decoded.ok()) {
        // Admitted by the schema, refused by validation: said on the resource, nothing made.
        MarkInvalid(ns, name, cr, decoded.status().message());
        clusters_.erase(key);
        continue;
      }
      present[key] = uid;
      auto& state = clusters_[key];
      if (!state || state->uid != uid) state = NewClusterState(ns, name, uid);
      if (!state) continue;
      op::ReconcileOnce(*state->store, *state->rt, *state->cluster_rec, *state->nodeset_rec, *state->workspace_rec,
                        *state->accounting, state->ledger.get(), &state->listing, nullptr);
    }
    for (auto it = clusters_.begin(); it != clusters_.end();) {
      // Deleted: Kubernetes' garbage collector removes what it owned.
      if (!present.count(it->first)) {
        spdlog::info("slurmcluster {} is gone", it->first);
        it = clusters_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  void MarkInvalid(const std::string& ns, const std::string& name, const json& cr, const std::string& why) {
    api::SlurmClusterStatus st = api::ClusterStatusFromJson(cr.value("status", json::object()));
    op::SetCondition(&st.conditions, "Invalid", true, "InvalidSpec", why);
    op::SetCondition(&st.conditions, "Ready", false, "InvalidSpec", why);
    st.observed_generation = cr["metadata"].value("generation", int64_t{1});
    KubernetesStore store(api_, ns, name);
    if (cr.value("status", json::object()) == api::StatusToJson(st)) return;
    spdlog::warn("slurmcluster {}/{}: {}", ns, name, why);
    if (Status s = store.WriteStatus("slurmclusters", name, api::StatusToJson(st)); !s.ok()) {
      spdlog::warn("slurmcluster {}: status: {}", name, s.message());
    }
  }

  std::unique_ptr<ClusterState> NewClusterState(const std::string& ns, const std::string& name,
                                                const std::string& uid) {
    auto s = std::make_unique<ClusterState>();
    s->uid = uid;
    s->store = std::make_unique<KubernetesStore>(api_, ns, name);
    k8s::ObjectContext ctx;
    ctx.namespace_name = ns;
    ctx.cluster = name;
    ctx.image = options_.objects.image;
    ctx.storage_class = options_.objects.storage_class;
    ctx.owner_uid = uid;
    s->rt = std::make_unique<k8s::KubernetesRuntime>(api_, ctx);
    s->tokens = std::make_unique<TokenSource>(s->rt.get());
    api::SlurmCluster named;
    named.metadata.name = name;
    s->control = std::make_unique<slurm::ScontrolInPod>(s->rt.get(), op::ControllerPodName(named));
    TokenSource* tokens = s->tokens.get();
    s->cluster_rec = std::make_unique<op::ClusterReconciler>(
        s->rt.get(), inputs_,
        [tokens](const std::string& host, int port) {
          return std::make_unique<slurm::RestClient>(host, port, "slurm", [tokens] { return tokens->Get(); });
        },
        s->control.get());
    s->nodeset_rec = std::make_unique<op::NodeSetReconciler>(s->rt.get(), inputs_, s->control.get());
    s->workspace_rec = std::make_unique<op::WorkspaceReconciler>(s->rt.get(), inputs_, s->control.get());
    s->accounting = std::make_unique<op::AccountingSync>(s->rt.get(), op::ControllerPodName(named));
    auto ledger = op::OwnershipLedger::Open(
        fmt::format("{}/{}-{}-owned.json", options_.state_dir, ns, name));
    if (!ledger.ok()) {
      spdlog::error("slurmcluster {}: {}", name, ledger.status().message());
      return nullptr;
    }
    s->ledger = std::make_unique<op::OwnershipLedger>(std::move(*ledger));
    spdlog::info("slurmcluster {}/{} (uid {}): reconciling", ns, name, uid);
    return s;
  }

  std::shared_ptr<k8s::ApiClient> api_;
  OperatorOptions options_;
  op::BuildInputs inputs_;
  std::map<std::string, std::unique_ptr<ClusterState>> clusters_;
};

std::string DefaultIdentity() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  return fmt::format("{}-{}", host, ::getpid());
}

}  // namespace

int RunOperator(const OperatorOptions& given) {
  OperatorOptions options = given;
  log::UseServiceFormat();
  auto conn = options.kubeconfig.empty() ? k8s::InClusterConnection() : k8s::LoadKubeconfig(options.kubeconfig);
  if (!conn.ok()) {
    spdlog::error("{}", conn.status().message());
    return 1;
  }
  if (options.lease_namespace.empty()) options.lease_namespace = conn->namespace_name;
  if (options.identity.empty()) options.identity = DefaultIdentity();
  if (Status s = files::MakeDirs(options.state_dir, 0700); !s.ok()) {
    spdlog::error("state dir: {}", s.message());
    return 1;
  }
  auto api = std::make_shared<k8s::ApiClient>(*conn);
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  ::sigaction(SIGTERM, &sa, nullptr);
  ::sigaction(SIGINT, &sa, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  spdlog::info("operator {} for {} on {}", options.identity,
               options.namespace_name.empty() ? "every namespace" : "namespace " + options.namespace_name, conn->server);

  Wakeup wakeup;
  // Each watch on its own connection (ApiClient serialises requests on one).
  std::vector<std::shared_ptr<k8s::ApiClient>> watch_clients;
  std::vector<std::thread> watchers;
  const std::string ns = options.namespace_name;
  for (const std::string& path :
       {CollectionPath(kCustomResourcePath, ns, "slurmclusters"), CollectionPath(kCustomResourcePath, ns, "nodesets"),
        CollectionPath(kCustomResourcePath, ns, "workspaces"),
        CollectionPath("/api/v1", ns, "pods") + "?labelSelector=" +
            k8s::QueryEscape(std::string(k8s::kManagedByLabel) + "=" + k8s::kManagedBy)}) {
    watch_clients.push_back(std::make_shared<k8s::ApiClient>(*conn));
    watchers.emplace_back(WatchLoop, watch_clients.back().get(), path, &wakeup);
  }

  LeaderElector elector(api, options.lease_namespace, "hpcplane-operator", options.identity, options.lease_duration);
  Operator op(api, options);
  const auto renew_every = std::chrono::duration_cast<std::chrono::milliseconds>(options.lease_duration) / 3;
  auto next_renew = std::chrono::steady_clock::now();
  while (!g_stop) {
    if (std::chrono::steady_clock::now() >= next_renew) {
      elector.TryAcquireOrRenew();
      next_renew = std::chrono::steady_clock::now() + renew_every;
    }
    if (elector.leading()) op.ReconcileAll();
    const auto until_renew = std::chrono::duration_cast<std::chrono::milliseconds>(
        next_renew - std::chrono::steady_clock::now());
    wakeup.Wait(std::clamp(std::min(until_renew, options.resync), std::chrono::milliseconds(0),
                           options.resync));
  }
  elector.Release();
  for (auto& t : watchers) t.join();
  spdlog::info("operator stopped");
  return 0;
}

}  // namespace hpc::app
