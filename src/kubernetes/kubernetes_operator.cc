#include "kubernetes/kubernetes_operator.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/files.h"
#include "common/log.h"
#include "common/stop_signal.h"
#include "kubernetes/kubernetes_store.h"
#include "kubernetes/leader_election.h"
#include "kubernetes/submission_watch.h"
#include "kubernetes/work_queue.h"
#include "operator/conditions.h"
#include "operator/reconcile_pass.h"
#include "runtime/kubernetes/informer.h"
#include "runtime/kubernetes/json_fields.h"
#include "runtime/kubernetes/kubernetes_runtime.h"
#include "runtime/kubernetes/server_version.h"

namespace hpc::kube {

namespace k8s = runtime::kubernetes;
using nlohmann::json;

namespace {

// The ownership ledger of a cluster in its own ConfigMap (<cluster>-ownership, owned by the
// SlurmCluster like every object of it): the next leader, on another node, reads what this one
// recorded. A ledger an earlier version kept in the replica's state directory is read once.
op::LedgerStorage LedgerInConfigMap(runtime::PodRuntime* rt, const std::string& old_file) {
  static constexpr const char* kName = "ownership";
  static constexpr const char* kKey = "ledger.json";
  op::LedgerStorage file = op::LedgerStorage::File(old_file);
  return {"ConfigMap ownership (key ledger.json)",
          [rt, file]() -> Result<std::optional<std::string>> {
            ASSIGN_OR_RETURN(auto cm, rt->GetConfigMap(kName));
            if (cm && cm->data.count(kKey)) return std::optional<std::string>(cm->data.at(kKey));
            return file.read();
          },
          [rt](const std::string& text) {
            return rt->ApplyConfigMap({kName, {{kKey, text}}, 0600});
          }};
}

// A collection in one namespace, or in all of them when `ns` is empty.
std::string CollectionPath(const std::string& api, const std::string& ns, const std::string& plural) {
  return ns.empty() ? fmt::format("{}/{}", api, plural) : fmt::format("{}/namespaces/{}/{}", api, ns, plural);
}

// Everything one SlurmCluster's passes keep between them.
struct ClusterState {
  std::string uid;
  ClusterImages images;  // what its environments resolved to: another needs new controllers
  std::unique_ptr<KubernetesStore> store;
  std::unique_ptr<k8s::KubernetesRuntime> rt;
  std::unique_ptr<op::ClusterControllers> controllers;
  k8s::ObjectContext ctx;
  // Set by the submission watch, taken by the next pass: that pass lists the queue afresh (a
  // listing reused from before the submission would not hold the new job).
  std::shared_ptr<std::atomic<bool>> submitted = std::make_shared<std::atomic<bool>>(false);
  // Under the operator's mutex: started by a pass, stopped when the replica stops leading.
  std::unique_ptr<SubmissionWatch> submissions;
};

// The resources the operator reads, each through an informer: its plural, its collection path,
// and the label selector that keeps the cache to hpcplane's own objects.
struct Watched {
  std::string plural;
  std::string api;
  std::string selector;
};

std::vector<Watched> WatchedResources() {
  const std::string ours = std::string(k8s::kManagedByLabel) + "=" + k8s::kManagedBy;
  return {{"slurmclusters", kCustomResourcePath, ""},
          {"nodesets", kCustomResourcePath, ""},
          {"workspaces", kCustomResourcePath, ""},
          {"pods", "/api/v1", ours},
          {"configmaps", "/api/v1", ours},
          {"secrets", "/api/v1", ours},
          {"services", "/api/v1", ours},
          {"persistentvolumeclaims", "/api/v1", ours},
          {"networkpolicies", "/apis/networking.k8s.io/v1", ours}};
}

// The SlurmCluster ("namespace/name") a changed object belongs to; empty for none.
std::string ClusterKeyOf(const std::string& plural, const json& object) {
  // In place (json_fields.h): a pod's metadata carries its whole spec.
  auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : std::string(); };
  const json& meta = k8s::Member(object, "metadata");
  const std::string ns = text(k8s::Member(meta, "namespace"));
  std::string cluster;
  if (plural == "slurmclusters") {
    cluster = text(k8s::Member(meta, "name"));
  } else if (plural == "nodesets" || plural == "workspaces") {
    cluster = text(k8s::Member(k8s::Member(object, "spec"), "cluster"));
  } else {
    cluster = text(k8s::Member(k8s::Member(meta, "labels"), "hpcplane.io/cluster"));
  }
  return ns.empty() || cluster.empty() ? "" : ns + "/" + cluster;
}

// Slurm takes over the state of at most three releases back, never of a newer one: a cluster
// whose image would change its Slurm that way (a new default image, another environment) is
// refused before anything is replaced, as `hpcplane upgrade` refuses it locally.
Status CheckReleaseChange(const json& cr, const ClusterImages& images) {
  const api::SlurmClusterStatus st = api::ClusterStatusFromJson(cr.value("status", json::object()));
  auto running = st.component_versions.find("slurm/slurmctld");
  if (running == st.component_versions.end()) return Status::Ok();
  auto from = slurm::Release::Parse(running->second);
  if (!from.ok() || from->Series() == images.release.Series()) return Status::Ok();
  return slurm::CheckUpgrade(*from, images.release).WithContext("image " + images.image);
}

class Operator {
 public:
  // `on_submission` is told a cluster's key when a job was submitted to it (the work queue).
  Operator(k8s::Connection conn, OperatorOptions options,
           const std::map<std::string, std::unique_ptr<k8s::Informer>>& informers,
           std::function<void(const std::string& key)> on_submission)
      : conn_(std::move(conn)),
        api_(std::make_shared<k8s::ApiClient>(conn_)),
        on_submission_(std::move(on_submission)),
        options_(std::move(options)),
        inputs_(KubernetesBuildInputs(options_.objects.release)) {
    for (const auto& [plural, informer] : informers) caches_.Add(plural, informer.get());
    clusters_cache_ = &informers.at("slurmclusters")->cache();
  }

  // Every SlurmCluster the cache holds (a new leader's first passes).
  // A replica that starts acting (leading, every cache listed) queues every cluster; one that stops
  // stops watching their submissions (it passes nothing until it acts again, and its next pass of
  // each cluster watches again).
  void ActingChanged(bool acting, WorkQueue& queue) {
    if (acting) {
      for (const auto& key : Keys()) queue.Add(key);
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, state] : clusters_) {
      if (state) state->submissions.reset();
    }
  }

  std::vector<std::string> Keys() const {
    std::vector<std::string> out;
    for (const auto& cr : clusters_cache_->List(options_.namespace_name)) {
      out.push_back(ClusterKeyOf("slurmclusters", cr));
    }
    return out;
  }

  // One pass of one SlurmCluster; a worker holds its key, so no other pass of it runs meanwhile.
  // What the queue should do next with the key.
  enum class Next { kResync, kRetry, kNothing };
  Next Reconcile(const std::string& key, std::chrono::milliseconds* resync_in) {
    *resync_in = options_.resync;
    const auto slash = key.find('/');
    const std::string ns = key.substr(0, slash);
    const std::string name = key.substr(slash + 1);
    auto cr = clusters_cache_->Get(ns, name);
    if (!cr) {
      // Deleted: Kubernetes' garbage collector removes what it owned.
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (clusters_.erase(key)) spdlog::info("slurmcluster {} is gone", key);
      }
      KubernetesStore store(api_, ns, name);
      store.UseCaches(caches_);
      if (Status s = store.ReleaseWorkspaces(); !s.ok()) {
        spdlog::warn("slurmcluster {}: workspaces: {}", key, s.message());
        return Next::kRetry;
      }
      return Next::kNothing;
    }
    cr = WithKind(std::move(*cr), "slurmclusters");
    const std::string uid = (*cr)["metadata"].value("uid", "");
    // Refused (admitted by the schema, refused by validation; an environment with no image here;
    // a Slurm it cannot take over): said on the resource, nothing made or replaced, never run
    // with another image in its place. Its next change queues it again.
    auto decoded = DecodeCustomResource(*cr);
    Result<ClusterImages> images = decoded.ok()
                                       ? ResolveClusterImages(decoded->clusters.at(0), options_.objects.environments,
                                                              {options_.objects.image, options_.objects.release})
                                       : Result<ClusterImages>(decoded.status());
    if (Status refused = images.ok() ? CheckReleaseChange(*cr, *images) : images.status(); !refused.ok()) {
      MarkInvalid(ns, name, *cr, refused.message());
      std::lock_guard<std::mutex> lock(mu_);
      clusters_.erase(key);
      return Next::kNothing;
    }
    ClusterState* state;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& slot = clusters_[key];
      if (!slot || slot->uid != uid || slot->images != *images) slot = NewClusterState(ns, name, uid, *images);
      state = slot.get();
      if (state && !state->submissions) WatchSubmissions(key, name, state);
    }
    if (!state) return Next::kRetry;
    if (state->submitted->exchange(false)) state->controllers->listing.Invalidate();
    const auto started = std::chrono::steady_clock::now();
    op::PassOutcome outcome = op::ReconcileOnce(*state->store, *state->controllers, nullptr);
    if (options_.on_pass) options_.on_pass(key, std::chrono::steady_clock::now() - started, outcome.converged);
    if (outcome.duty_in) *resync_in = std::min(*resync_in, std::chrono::milliseconds(*outcome.duty_in));
    return outcome.converged ? Next::kResync : Next::kRetry;
  }

 private:
  void MarkInvalid(const std::string& ns, const std::string& name, const json& cr, const std::string& why) {
    api::SlurmClusterStatus st = api::ClusterStatusFromJson(cr.value("status", json::object()));
    op::SetCondition(&st.conditions, "Invalid", true, "InvalidSpec", why);
    op::SetCondition(&st.conditions, "Ready", false, "InvalidSpec", why);
    st.observed_generation = cr["metadata"].value("generation", int64_t{1});
    if (cr.value("status", json::object()) == api::StatusToJson(st)) return;
    KubernetesStore store(api_, ns, name);
    store.UseCaches(caches_);
    spdlog::warn("slurmcluster {}/{}: {}", ns, name, why);
    if (Status s = store.WriteStatus("slurmclusters", name, api::StatusToJson(st)); !s.ok()) {
      spdlog::warn("slurmcluster {}: status: {}", name, s.message());
    }
  }

  // A submission queues the cluster at once, as the local daemon's inotify does (on a connection
  // of its own: its exec waits up to 25 s). Under mu_.
  void WatchSubmissions(const std::string& key, const std::string& name, ClusterState* state) {
    api::SlurmCluster named;
    named.metadata.name = name;
    const std::string pod = op::ControllerPodName(named);
    state->submissions = std::make_unique<SubmissionWatch>(
        "slurmcluster " + key,
        options_.slurm.submissions
            ? options_.slurm.submissions(state->ctx, pod)
            : SubmissionWatch::InControllerPod(std::make_shared<k8s::ApiClient>(conn_), state->ctx, pod),
        [this, key, submitted = state->submitted] {
          submitted->store(true);
          on_submission_(key);
        });
  }

  std::unique_ptr<ClusterState> NewClusterState(const std::string& ns, const std::string& name, const std::string& uid,
                                                const ClusterImages& images) {
    auto s = std::make_unique<ClusterState>();
    s->uid = uid;
    s->images = images;
    // A connection of its own: passes of different clusters do not wait for each other's requests.
    auto api = std::make_shared<k8s::ApiClient>(conn_);
    s->store = std::make_unique<KubernetesStore>(api, ns, name);
    s->store->UseCaches(caches_);
    s->store->CheckEnvironmentsWith([this, images](const std::string& environment) {
      return CheckEnvironment(environment, images, options_.objects.environments,
                              {options_.objects.image, options_.objects.release});
    });
    k8s::ObjectContext ctx = ObjectContextFor(options_.objects, ns, name);
    ctx.owner_uid = uid;
    op::BuildInputs inputs = inputs_;
    UseClusterImages(images, &inputs, &ctx);
    s->rt = std::make_unique<k8s::KubernetesRuntime>(api, ctx);
    s->rt->UseCaches(caches_);
    op::LedgerStorage ledger =
        LedgerInConfigMap(s->rt.get(), fmt::format("{}/{}-{}-owned.json", options_.state_dir, ns, name));
    auto controllers = options_.slurm.controllers
                           ? options_.slurm.controllers(s->rt.get(), inputs, name, std::move(ledger))
                           : op::NewClusterControllers(s->rt.get(), inputs, name, std::move(ledger));
    if (!controllers.ok()) {
      spdlog::error("slurmcluster {}: {}", name, controllers.status().message());
      return nullptr;
    }
    s->controllers = std::move(*controllers);
    s->ctx = ctx;
    spdlog::info("slurmcluster {}/{} (uid {}): reconciling, Slurm {} from {}", ns, name, uid, images.release.Series(),
                 images.image);
    return s;
  }

  const k8s::Connection conn_;
  std::shared_ptr<k8s::ApiClient> api_;  // status of invalid resources
  const std::function<void(const std::string& key)> on_submission_;
  OperatorOptions options_;
  op::BuildInputs inputs_;
  k8s::Caches caches_;
  const k8s::ObjectCache* clusters_cache_;
  std::mutex mu_;  // clusters_ itself; each state is used only by the worker holding its key
  std::map<std::string, std::unique_ptr<ClusterState>> clusters_;
};

// Ends every informer's watch now (each would run to its five-minute end) and joins their threads.
void StopWatchers(const std::map<std::string, std::unique_ptr<k8s::Informer>>& informers,
                  std::vector<std::thread>* watchers) {
  std::vector<k8s::Informer*> running;
  for (const auto& [plural, informer] : informers) running.push_back(informer.get());
  k8s::StopInformers(running);
  for (auto& t : *watchers) t.join();
}

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
  // An API server it cannot read yet (starting, unreachable) is checked again by the watches;
  // one that answers with too old a version is refused at once, saying why.
  if (auto version = api->Get("/version"); version.ok()) {
    if (Status s = k8s::CheckServerVersion(*version); !s.ok()) {
      spdlog::error("{}", s.message());
      return 1;
    }
    spdlog::info("Kubernetes {}", version->value("gitVersion", "?"));
  } else {
    spdlog::warn("the API server's version: {}", version.status().message());
  }
  InstallStopHandlers();
  spdlog::info("operator {} for {} on {}", options.identity,
               options.namespace_name.empty() ? "every namespace" : "namespace " + options.namespace_name,
               conn->server);

  // Each informer on a connection of its own (ApiClient serialises requests on one).
  std::map<std::string, std::unique_ptr<k8s::Informer>> informers;
  std::vector<std::thread> watchers;
  WorkQueue queue({std::chrono::milliseconds(100), std::chrono::milliseconds(200), options.resync});
  for (const Watched& w : WatchedResources()) {
    auto client = std::make_shared<k8s::ApiClient>(*conn);
    auto& informer = informers[w.plural] =
        std::make_unique<k8s::Informer>(client, CollectionPath(w.api, options.namespace_name, w.plural), w.selector);
    watchers.emplace_back([&queue, informer = informer.get(), plural = w.plural] {
      informer->Run(StopFlag(), [&](const k8s::WatchEvent& e) {
        if (std::string key = ClusterKeyOf(plural, e.object); !key.empty()) queue.Add(key);
      });
    });
  }
  auto all_synced = [&] {
    return std::all_of(informers.begin(), informers.end(), [](const auto& i) { return i.second->synced(); });
  };

  LeaderElector elector(api, options.lease_namespace, "hpcplane-operator", options.identity, options.lease_duration);
  Operator op(*conn, options, informers, [&queue](const std::string& key) { queue.Add(key); });
  std::vector<std::thread> workers;
  for (int i = 0; i < options.workers; ++i) {
    workers.emplace_back([&] {
      while (auto key = queue.Get()) {
        // Only the leader acts, and only once every cache has listed (an empty cache is not
        // an empty cluster). A new leader queues every cluster again.
        if (!elector.leading() || !all_synced()) {
          queue.Done(*key);
          continue;
        }
        std::chrono::milliseconds resync_in;
        switch (op.Reconcile(*key, &resync_in)) {
          case Operator::Next::kResync:
            queue.Forget(*key);
            queue.AddAfter(*key, resync_in);
            break;
          case Operator::Next::kRetry:
            queue.AddRateLimited(*key);  // not converged yet, or failing: sooner, backing off
            break;
          case Operator::Next::kNothing:
            queue.Forget(*key);
            break;
        }
        queue.Done(*key);
      }
    });
  }

  const auto renew_every = std::chrono::duration_cast<std::chrono::milliseconds>(options.lease_duration) / 3;
  auto next_renew = std::chrono::steady_clock::now();
  bool acting = false;  // leading, with every cache listed
  while (!StopFlag()) {
    if (std::chrono::steady_clock::now() >= next_renew) {
      elector.TryAcquireOrRenew();
      next_renew = std::chrono::steady_clock::now() + renew_every;
    }
    const bool now_acting = elector.leading() && all_synced();
    if (now_acting != acting) op.ActingChanged(now_acting, queue);
    acting = now_acting;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the lease's and the signals' pace
  }
  queue.ShutDown();
  for (auto& t : workers) t.join();
  elector.Release();
  StopWatchers(informers, &watchers);
  spdlog::info("operator stopped");
  return 0;
}

}  // namespace hpc::kube
