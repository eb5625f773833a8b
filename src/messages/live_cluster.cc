#include "messages/live_cluster.h"

#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpc::cp {
using nlohmann::json;

json ToJson(const LiveCluster& c) {
  json nodes = json::array(), partitions = json::array(), queue = json::array(), nodesets = json::array(),
       controllers = json::array();
  for (const auto& k : c.controllers) {
    controllers.push_back({{"name", k.name}, {"role", k.role}, {"responding", k.responding}, {"serving", k.serving}});
  }
  // An unknown value (-1) is null, not a made-up zero.
  auto known = [](int64_t v) { return v < 0 ? json(nullptr) : json(v); };
  for (const auto& n : c.nodes) {
    json gpus = json::array();
    for (const auto& g : n.gpus) {
      gpus.push_back({{"busId", g.bus_id},
                      {"utilizationPercent", known(g.utilization_percent)},
                      {"memoryUsedMiB", known(g.memory_used_mib)},
                      {"memoryTotalMiB", known(g.memory_total_mib)},
                      {"temperatureCelsius", known(g.temperature_celsius)}});
    }
    nodes.push_back({{"name", n.name},
                     {"nodeset", n.nodeset},
                     {"state", n.state},
                     {"flags", n.flags},
                     {"reason", n.reason},
                     {"cpus", n.cpus},
                     {"cpusAllocated", n.cpus_allocated},
                     {"memoryMiB", n.memory_mib},
                     {"memoryAllocatedMiB", n.memory_allocated_mib},
                     {"partitions", n.partitions},
                     {"gpus", gpus}});
  }
  for (const auto& p : c.partitions) {
    partitions.push_back({{"name", p.name}, {"state", p.state}, {"nodes", p.nodes}, {"cpus", p.cpus}});
  }
  for (const auto& j : c.queue) {
    queue.push_back({{"jobId", j.job_id},
                     {"name", j.name},
                     {"user", j.user},
                     {"account", j.account},
                     {"partition", j.partition},
                     {"state", j.state},
                     {"reason", j.reason},
                     {"nodes", j.nodes},
                     {"cpus", j.cpus},
                     {"submitTime", j.submit_time},
                     {"startTime", j.start_time}});
  }
  for (const auto& s : c.nodesets) {
    nodesets.push_back({{"name", s.name},
                        {"desired", s.desired},
                        {"current", s.current},
                        {"busy", s.busy},
                        {"idle", s.idle},
                        {"draining", s.draining}});
  }
  return {{"collectedAt", c.collected_at},
          {"controllers", controllers},
          {"nodes", nodes},
          {"partitions", partitions},
          {"queue", queue},
          {"queueTotal", c.queue_total},
          {"nodesets", nodesets}};
}

std::string EncodeLiveCluster(LiveCluster c, size_t max_bytes) {
  auto encode = [&] { return ToJson(c).dump(-1, ' ', false, json::error_handler_t::replace); };
  std::string text = encode();
  while (text.size() > max_bytes && !c.queue.empty()) {
    c.queue.resize(c.queue.size() / 2);
    text = encode();
  }
  // Then the GPUs' numbers (5,000 nodes of 8 GPUs each would not fit): the nodes themselves stay.
  if (text.size() > max_bytes) {
    for (auto& n : c.nodes) n.gpus.clear();
    text = encode();
  }
  return text;
}

namespace {

constexpr size_t kMaxText = 512;  // a reason, a job name: Slurm's own are shorter
constexpr int64_t kMaxCount = int64_t{1} << 40;

// Reads the fields of one object; the first problem is kept, naming the field by its path.
class FieldReader {
 public:
  FieldReader(const json& object, std::string path, Status* first_error)
      : j_(object), path_(std::move(path)), error_(first_error) {
    if (!j_.is_object()) Fail("", "must be an object");
  }

  std::string Text(const char* name) {
    const json* v = Get(name);
    if (!v) return "";
    if (!v->is_string()) return Fail(name, "must be a string"), "";
    std::string s = v->get<std::string>();
    if (s.size() > kMaxText) return Fail(name, fmt::format("must be at most {} characters", kMaxText)), "";
    return s;
  }

  // A resource name as hpcplane gives them (nodesets keep their history under it).
  std::string Name(const char* name) {
    static const std::regex re("^[a-z][a-z0-9-]{0,62}$");
    std::string s = Text(name);
    if (error_->ok() && !std::regex_match(s, re)) Fail(name, "must be a lowercase name");
    return s;
  }

  int64_t Count(const char* name) {
    const json* v = Get(name);
    if (!v) return 0;
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > kMaxCount) {
      return Fail(name, "must be a non-negative integer"), 0;
    }
    return v->get<int64_t>();
  }

  bool Flag(const char* name) {
    const json* v = Get(name);
    if (!v) return false;
    if (!v->is_boolean()) return Fail(name, "must be true or false"), false;
    return v->get<bool>();
  }

  int SmallCount(const char* name) { return static_cast<int>(std::min<int64_t>(Count(name), INT32_MAX)); }

  // A count that may be unknown (absent or null): -1 then.
  int64_t CountOrUnknown(const char* name) { return Get(name) ? Count(name) : -1; }

  std::vector<std::string> Texts(const char* name) {
    std::vector<std::string> out;
    const json* v = Get(name);
    if (!v) return out;
    if (!v->is_array() || v->size() > 64) return Fail(name, "must be a list of at most 64 strings"), out;
    for (const auto& s : *v) {
      if (!s.is_string() || s.get<std::string>().size() > kMaxText) return Fail(name, "must hold strings"), out;
      out.push_back(s.get<std::string>());
    }
    return out;
  }

  // Each element of list `name` (at most `max`), read by `read`.
  template <typename Fn>
  void List(const char* name, size_t max, Fn read) {
    const json* v = Get(name);
    if (!v) return;
    if (!v->is_array()) return Fail(name, "must be a list");
    if (v->size() > max) return Fail(name, fmt::format("must hold at most {} entries (got {})", max, v->size()));
    for (size_t i = 0; i < v->size() && error_->ok(); ++i) {
      FieldReader element((*v)[i], fmt::format("{}{}[{}]", Prefix(), name, i), error_);
      if (error_->ok()) read(element);
    }
  }

 private:
  std::string Prefix() const { return path_.empty() ? "" : path_ + "."; }

  const json* Get(const char* name) {
    if (!error_->ok() || !j_.is_object() || !j_.contains(name) || j_[name].is_null()) return nullptr;
    return &j_[name];
  }

  void Fail(const std::string& name, const std::string& why) {
    if (!error_->ok()) return;
    std::string field = name.empty() ? path_ : Prefix() + name;
    *error_ = Status::InvalidArgument(field, why);
  }

  const json& j_;
  std::string path_;
  Status* error_;
};

}  // namespace

Result<LiveCluster> LiveClusterFromJson(const json& j) {
  Status error;
  FieldReader r(j, "", &error);
  LiveCluster c;
  c.collected_at = r.Count("collectedAt");
  c.queue_total = r.Count("queueTotal");
  r.List("controllers", kMaxLiveControllers, [&](FieldReader& e) {
    c.controllers.push_back({e.Name("name"), e.Name("role"), e.Flag("responding"), e.Flag("serving")});
  });
  r.List("nodes", kMaxLiveNodes, [&](FieldReader& e) {
    LiveNode n;
    n.name = e.Text("name"), n.nodeset = e.Text("nodeset"), n.state = e.Text("state"), n.reason = e.Text("reason");
    n.flags = e.Texts("flags"), n.partitions = e.Texts("partitions");
    n.cpus = e.SmallCount("cpus"), n.cpus_allocated = e.SmallCount("cpusAllocated");
    n.memory_mib = e.Count("memoryMiB"), n.memory_allocated_mib = e.Count("memoryAllocatedMiB");
    e.List("gpus", kMaxLiveNodeGpus, [&](FieldReader& g) {
      LiveGpu gpu;
      gpu.bus_id = g.Text("busId");
      gpu.utilization_percent = static_cast<int>(std::min<int64_t>(g.CountOrUnknown("utilizationPercent"), 100));
      gpu.memory_used_mib = g.CountOrUnknown("memoryUsedMiB");
      gpu.memory_total_mib = g.CountOrUnknown("memoryTotalMiB");
      gpu.temperature_celsius = static_cast<int>(std::min<int64_t>(g.CountOrUnknown("temperatureCelsius"), 1000));
      n.gpus.push_back(std::move(gpu));
    });
    c.nodes.push_back(std::move(n));
  });
  r.List("partitions", kMaxLiveNodeSets, [&](FieldReader& e) {
    c.partitions.push_back({e.Text("name"), e.Text("state"), e.SmallCount("nodes"), e.SmallCount("cpus")});
  });
  r.List("queue", kMaxQueuedJobs, [&](FieldReader& e) {
    LiveJob q;
    q.job_id = e.Count("jobId"), q.name = e.Text("name"), q.user = e.Text("user"), q.account = e.Text("account");
    q.partition = e.Text("partition"), q.state = e.Text("state"), q.reason = e.Text("reason");
    q.nodes = e.SmallCount("nodes"), q.cpus = e.SmallCount("cpus");
    q.submit_time = e.Count("submitTime"), q.start_time = e.Count("startTime");
    c.queue.push_back(std::move(q));
  });
  r.List("nodesets", kMaxLiveNodeSets, [&](FieldReader& e) {
    c.nodesets.push_back({e.Name("name"), e.SmallCount("desired"), e.SmallCount("current"), e.SmallCount("busy"),
                          e.SmallCount("idle"), e.SmallCount("draining")});
  });
  if (!error.ok()) return error;
  if (c.queue_total < static_cast<int64_t>(c.queue.size())) {
    return Status::InvalidArgument("queueTotal", "must be at least the number of jobs in queue");
  }
  return c;
}

}  // namespace hpc::cp
