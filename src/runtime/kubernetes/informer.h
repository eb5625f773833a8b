// The operator's view of the API: one collection listed once and then watched, kept in memory
// (client-go's reflector and store in one), so that a reconcile pass reads what it needs from
// here instead of sending a GET for every object. Each change is passed on (the operator maps
// it to the SlurmCluster it belongs to and queues that one).
//
// The cache may lag the API by a watch event. Callers that write therefore never trust it for
// a write's precondition: a create that meets 409 AlreadyExists, or an update that meets 409
// Conflict, reads the object again from the API. A write's answer is put in the cache at once
// (Observe), so the next pass sees the operator's own writes even before their events arrive;
// an event never replaces a newer version than its own.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/kubernetes/api_client.h"

namespace hpc::runtime::kubernetes {

// Objects of one collection by "namespace/name". Pure and thread-safe. Objects are held without
// metadata.managedFields (the API server's field bookkeeping, often the largest part of a pod,
// which hpcplane never reads).
class ObjectCache {
 public:
  // A list's items replace everything held; returns the changes (ADDED, MODIFIED, DELETED)
  // between what was held and the list, so that nothing missed while not watching goes unseen.
  std::vector<WatchEvent> Replace(const nlohmann::json& items);
  // A watch event. False when it changed nothing (a BOOKMARK, or older than what is held).
  bool Apply(const WatchEvent& event);
  // A write's answer from the API.
  void Observe(const nlohmann::json& object);

  std::optional<nlohmann::json> Get(const std::string& namespace_name, const std::string& name) const;
  // The objects of a namespace (every one when empty) whose labels include all of `labels`.
  std::vector<nlohmann::json> List(const std::string& namespace_name,
                                   const std::map<std::string, std::string>& labels = {}) const;
  // The same objects, each passed to `visit` in place (no copy), under the cache's lock: `visit`
  // must not call back into this cache.
  void ForEach(const std::string& namespace_name, const std::map<std::string, std::string>& labels,
               const std::function<void(const nlohmann::json&)>& visit) const;
  size_t size() const;

 private:
  static std::string Key(const nlohmann::json& object);
  static nlohmann::json Trimmed(nlohmann::json object);
  // Whether `incoming` may replace `held`: not when both resourceVersions are numbers (as etcd's
  // are) and the incoming one is smaller.
  static bool NotOlder(const nlohmann::json& incoming, const nlohmann::json& held);

  mutable std::mutex mu_;
  std::map<std::string, nlohmann::json> objects_;
};

class Informer {
 public:
  using Handler = std::function<void(const WatchEvent&)>;
  // `collection`: e.g. /api/v1/pods or /api/v1/namespaces/NS/pods; `label_selector` as the API
  // takes it (empty: every object).
  Informer(std::shared_ptr<ApiClient> api, std::string collection, std::string label_selector = "");

  // Lists, then watches from the list's resourceVersion with bookmarks, each watch up to
  // kWatchSeconds; a broken stream resumes from the last version seen, 410 Gone lists again,
  // errors back off. Returns once Stop() was called, or `stop` is set and the watch in flight
  // ends. Run on a thread of its own, with an ApiClient of its own.
  void Run(const std::atomic<bool>& stop, const Handler& on_change);
  // Makes Run return now: its watch's connection is shut down. Thread-safe.
  void Stop();
  bool running() const { return running_; }

  // Whether the first list has arrived: until then the cache knows nothing.
  bool synced() const { return synced_; }
  ObjectCache& cache() { return cache_; }
  const ObjectCache& cache() const { return cache_; }
  const std::string& collection() const { return collection_; }
  int lists() const { return lists_; }

 private:
  std::shared_ptr<ApiClient> api_;
  std::string collection_;
  std::string selector_;
  ObjectCache cache_;
  std::atomic<bool> synced_{false};
  std::atomic<int> lists_{0};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> running_{false};
};

// How long one watch of an informer lasts before it is opened again (the API server's
// timeoutSeconds): long enough that an idle operator sends almost nothing; Stop() ends it early.
inline constexpr int kWatchSeconds = 300;

// Stops every informer and returns once none runs (a watch opened in the instant of a Stop is
// stopped again), or after `limit`.
void StopInformers(const std::vector<Informer*>& informers, std::chrono::milliseconds limit = std::chrono::seconds(10));

// The informers a KubernetesRuntime or KubernetesStore reads from, by resource (plural).
class Caches {
 public:
  void Add(const std::string& plural, Informer* informer) { informers_[plural] = informer; }
  // The cache of `plural` once its informer has listed; null before that or without one (then
  // the caller asks the API).
  ObjectCache* Synced(const std::string& plural) const {
    auto it = informers_.find(plural);
    return it != informers_.end() && it->second->synced() ? &it->second->cache() : nullptr;
  }

 private:
  std::map<std::string, Informer*> informers_;
};

}  // namespace hpc::runtime::kubernetes
