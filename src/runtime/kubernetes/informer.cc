#include "runtime/kubernetes/informer.h"

#include <cerrno>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/kubernetes/json_fields.h"

namespace hpc::runtime::kubernetes {

using nlohmann::json;

namespace {

std::optional<unsigned long long> NumericVersion(const json& object) {
  const json& meta = Member(object, "metadata");
  const std::string rv = meta.is_object() ? meta.value("resourceVersion", "") : "";
  if (rv.empty() || rv.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  unsigned long long v = std::strtoull(rv.c_str(), nullptr, 10);
  if (errno != 0) return std::nullopt;
  return v;
}

bool LabelsInclude(const json& object, const std::map<std::string, std::string>& wanted) {
  const json& labels = Member(Member(object, "metadata"), "labels");
  for (const auto& [k, v] : wanted) {
    const json& label = Member(labels, k.c_str());
    if (!label.is_string() || label.get_ref<const std::string&>() != v) return false;
  }
  return true;
}

}  // namespace

std::string ObjectCache::Key(const json& object) {
  const json& meta = Member(object, "metadata");
  if (!meta.is_object()) return "/";
  return meta.value("namespace", "") + "/" + meta.value("name", "");
}

bool ObjectCache::NotOlder(const json& incoming, const json& held) {
  auto in = NumericVersion(incoming);
  auto have = NumericVersion(held);
  return !in || !have || *in >= *have;
}

json ObjectCache::Trimmed(json object) {
  if (object.is_object() && object.contains("metadata") && object["metadata"].is_object()) {
    object["metadata"].erase("managedFields");
  }
  return object;
}

std::vector<WatchEvent> ObjectCache::Replace(const json& items) {
  std::map<std::string, json> fresh;
  for (const auto& item : items) fresh[Key(item)] = Trimmed(item);
  std::vector<WatchEvent> changes;
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, object] : objects_) {
    if (!fresh.count(key)) changes.push_back({"DELETED", object});
  }
  for (const auto& [key, object] : fresh) {
    auto held = objects_.find(key);
    if (held == objects_.end()) {
      changes.push_back({"ADDED", object});
    } else if (held->second != object) {
      changes.push_back({"MODIFIED", object});
    }
  }
  objects_ = std::move(fresh);
  return changes;
}

bool ObjectCache::Apply(const WatchEvent& event) {
  if (event.type != "ADDED" && event.type != "MODIFIED" && event.type != "DELETED") return false;
  const std::string key = Key(event.object);
  std::lock_guard<std::mutex> lock(mu_);
  auto held = objects_.find(key);
  if (held != objects_.end() && !NotOlder(event.object, held->second)) return false;
  if (event.type == "DELETED") {
    if (held == objects_.end()) return false;
    objects_.erase(held);
  } else {
    objects_[key] = Trimmed(event.object);
  }
  return true;
}

void ObjectCache::Observe(const json& object) {
  if (!object.is_object() || !object.contains("metadata")) return;
  const std::string key = Key(object);
  std::lock_guard<std::mutex> lock(mu_);
  auto held = objects_.find(key);
  if (held == objects_.end() || NotOlder(object, held->second)) objects_[key] = Trimmed(object);
}

std::optional<json> ObjectCache::Get(const std::string& namespace_name, const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = objects_.find(namespace_name + "/" + name);
  if (it == objects_.end()) return std::nullopt;
  return it->second;
}

std::vector<json> ObjectCache::List(const std::string& namespace_name,
                                    const std::map<std::string, std::string>& labels) const {
  std::vector<json> out;
  ForEach(namespace_name, labels, [&](const json& object) { out.push_back(object); });
  return out;
}

void ObjectCache::ForEach(const std::string& namespace_name, const std::map<std::string, std::string>& labels,
                          const std::function<void(const json&)>& visit) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, object] : objects_) {
    if (!namespace_name.empty() && key.compare(0, namespace_name.size() + 1, namespace_name + "/") != 0) continue;
    if (LabelsInclude(object, labels)) visit(object);
  }
}

size_t ObjectCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return objects_.size();
}

Informer::Informer(std::shared_ptr<ApiClient> api, std::string collection, std::string label_selector)
    : api_(std::move(api)), collection_(std::move(collection)), selector_(std::move(label_selector)) {}

void Informer::Stop() {
  stopping_ = true;
  api_->CancelWatches();
}

void StopInformers(const std::vector<Informer*>& informers, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    bool any = false;
    for (Informer* i : informers) {
      i->Stop();
      any = any || i->running();
    }
    if (!any || std::chrono::steady_clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

void Informer::Run(const std::atomic<bool>& stop, const Handler& on_change) {
  running_ = true;
  struct Done {
    std::atomic<bool>* running;
    ~Done() { *running = false; }
  } done{&running_};
  const std::string path = selector_.empty() ? collection_ : collection_ + "?labelSelector=" + QueryEscape(selector_);
  std::string rv;
  const auto first_backoff = std::chrono::milliseconds(200);
  auto backoff = first_backoff;
  auto pause = [&] {
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(5000));
  };
  while (!stop && !stopping_) {
    if (rv.empty()) {
      auto list = api_->Get(path);
      if (!list.ok()) {
        spdlog::warn("list {}: {}", collection_, list.status().message());
        pause();
        continue;
      }
      rv = (*list)["metadata"].value("resourceVersion", "");
      // What changed while not watching is in the difference from the list.
      for (const auto& change : cache_.Replace(list->value("items", json::array()))) on_change(change);
      ++lists_;
      synced_ = true;
    }
    auto end = api_->Watch(path, rv, kWatchSeconds, [&](const WatchEvent& e) {
      if (cache_.Apply(e)) on_change(e);
      return !stop.load() && !stopping_.load();
    });
    if (!end.ok()) {
      spdlog::warn("watch {}: {}", collection_, end.status().message());
      pause();
      continue;
    }
    backoff = first_backoff;
    if (end->expired) {
      spdlog::info("watch {}: resourceVersion {} expired; listing again", collection_, rv);
      rv.clear();
    } else {
      rv = end->resource_version;
    }
  }
}

}  // namespace hpc::runtime::kubernetes
