#include "slurm/rest_client.h"

#include "slurm/json_filter.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace hpc::slurm {
using nlohmann::json;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// The two shapes of Slurm's JSON: data parser v0.0.38 (Slurm 22.05) and v0.0.40 on (23.11 on,
// what squeue --json and slurmrestd give on 24.11 and 26.05). Later versions write numbers that
// may be unset or infinite as {"set": true, "infinite": false, "number": N}, and states and flags
// as lists of strings (["IDLE", "DYNAMIC_NORM"]) where v0.0.38 has a string and a separate
// flags list.

// A number, or the number of such an object; nullopt when absent, unset or infinite.
std::optional<double> Number(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end()) return std::nullopt;
  if (it->is_number()) return it->get<double>();
  if (it->is_object() && it->value("set", false) && !it->value("infinite", false)) {
    auto n = it->find("number");
    if (n != it->end() && n->is_number()) return n->get<double>();
  }
  return std::nullopt;
}

// Integers slurmrestd may send as null, unset, infinite or as Slurm's NO_VAL/INFINITE
// sentinels: 0 then.
int64_t Int(const json& obj, const char* key) {
  auto v = Number(obj, key);
  if (!v || *v < 0 || *v >= 4294967294.0) return 0;
  return static_cast<int64_t>(*v);
}

std::string Str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// A list of strings, or a comma-separated string of them.
std::vector<std::string> Strings(const json& obj, const char* key) {
  std::vector<std::string> out;
  auto it = obj.find(key);
  if (it == obj.end()) return out;
  if (it->is_array()) {
    for (const auto& v : *it) {
      if (v.is_string()) out.push_back(v.get<std::string>());
    }
  } else if (it->is_string()) {
    const std::string s = it->get<std::string>();
    size_t start = 0;
    while (start < s.size()) {
      size_t comma = s.find(',', start);
      if (comma == std::string::npos) comma = s.size();
      if (comma > start) out.push_back(s.substr(start, comma - start));
      start = comma + 1;
    }
  }
  return out;
}

// A state: a string (v0.0.38), or the first of a list whose others are flags (v0.0.40 on).
std::string State(const json& obj, const char* key) {
  auto states = Strings(obj, key);
  return states.empty() ? std::string() : states.front();
}

// Errors slurmrestd reports inside a 200 answer.
Status BodyErrors(const json& j) {
  if (j.contains("errors") && j["errors"].is_array() && !j["errors"].empty()) {
    const auto& e = j["errors"][0];
    if (e.is_object() && e.contains("error") && e["error"].is_string()) {
      return Status::Errorf("slurmrestd: {}", e["error"].get<std::string>());
    }
    return Status::Errorf("slurmrestd: {}", e.dump(-1, ' ', false, json::error_handler_t::replace));
  }
  return Status::Ok();
}
}  // namespace

// GPUs per node in a TRES string such as "gres:gpu:2", "gres/gpu=2" or "gres:gpu:a100:1".
int GpusIn(const std::string& tres) {
  auto pos = tres.find("gpu");
  if (pos == std::string::npos) return 0;
  auto sep = tres.find_last_of(":=");
  if (sep == std::string::npos || sep < pos) return 1;
  int n = std::atoi(tres.c_str() + sep + 1);
  return n > 0 ? n : 1;
}

Result<std::string> RestClient::Get(const std::string& path) {
  httplib::Client cli(host_, port_);
  auto secs = std::chrono::duration_cast<std::chrono::seconds>(timeout_).count();
  auto usecs = std::chrono::duration_cast<std::chrono::microseconds>(timeout_).count() % 1000000;
  cli.set_connection_timeout(secs, usecs);
  cli.set_read_timeout(secs, usecs);
  httplib::Headers headers = {{"X-SLURM-USER-NAME", user_}, {"X-SLURM-USER-TOKEN", token_()}};
  auto res = cli.Get(path.c_str(), headers);
  if (!res) {
    return Status::Errorf("slurmrestd at {}:{} unreachable: {}", host_, port_, httplib::to_string(res.error()));
  }
  if (res->status != 200) {
    std::string body = res->body.substr(0, 200);
    return Status::Errorf("slurmrestd {} answered HTTP {}: {}", path, res->status, body);
  }
  return res->body;
}

Result<std::string> RestClient::Ping() {
  ASSIGN_OR_RETURN(std::string body, Get(api_ + "/ping"));
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /ping: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  for (const auto& p : j.value("pings", json::array())) {
    if (!p.is_object()) continue;
    // v0.0.38: "ping": "UP"; later: "pinged": "UP" (and "responding": true).
    if (Str(p, "ping") == "UP" || Str(p, "pinged") == "UP") {
      const json meta = j.value("meta", json::object());
      const json slurm = meta.contains("slurm") ? meta["slurm"] : meta.value("Slurm", json::object());
      std::string release = slurm.is_object() ? Str(slurm, "release") : "";
      return release.empty() ? std::string("unknown") : release;
    }
  }
  return Status::Error("slurmrestd /ping: slurmctld is not UP");
}

Result<std::vector<SlurmNode>> RestClient::Nodes() {
  ASSIGN_OR_RETURN(std::string body, Get(api_ + "/nodes"));
  return ParseNodes(body);
}

Result<std::vector<SlurmJob>> RestClient::Jobs() {
  ASSIGN_OR_RETURN(std::string body, Get(api_ + "/jobs"));
  return ParseJobs(body);
}

Result<std::vector<SlurmPartition>> RestClient::Partitions() {
  ASSIGN_OR_RETURN(std::string body, Get(api_ + "/partitions"));
  return ParsePartitions(body);
}

Result<std::vector<SlurmPartition>> RestClient::ParsePartitions(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /partitions: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  std::vector<SlurmPartition> out;
  try {
    for (const auto& p : j.at("partitions")) {
      // v0.0.40 on: the state is in "partition": {"state": ["UP"]}.
      std::string state = State(p, "state");
      if (state.empty() && p.contains("partition") && p["partition"].is_object())
        state = State(p["partition"], "state");
      out.push_back({Str(p, "name"), Upper(state)});
    }
  } catch (const json::exception& e) {
    return Status::Errorf("slurmrestd /partitions: unexpected answer: {}", e.what());
  }
  return out;
}

Result<std::vector<SlurmNode>> RestClient::ParseNodes(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /nodes: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  std::vector<SlurmNode> out;
  try {
    for (const auto& n : j.at("nodes")) {
      SlurmNode node;
      node.name = Str(n, "name");
      auto states = Strings(n, "state");
      node.state = Lower(states.empty() ? "unknown" : states.front());
      for (size_t i = 1; i < states.size(); ++i) node.flags.insert(Upper(states[i]));
      for (const auto& f : Strings(n, "state_flags")) node.flags.insert(Upper(f));
      node.reason = Str(n, "reason");
      node.reason_set_by = Str(n, "reason_set_by_user");
      node.reason_changed_at = Int(n, "reason_changed_at");
      node.extra = Str(n, "extra");
      for (const auto& f : Strings(n, "features")) node.features.insert(f);
      for (const auto& p : Strings(n, "partitions")) node.partitions.insert(p);
      node.cpus = static_cast<int>(Int(n, "cpus"));
      node.alloc_cpus = static_cast<int>(Int(n, "alloc_cpus"));
      node.memory_mib = Int(n, "real_memory");
      node.alloc_memory_mib = Int(n, "alloc_memory");
      node.last_busy = Int(n, "last_busy");
      out.push_back(std::move(node));
    }
  } catch (const json::exception& e) {
    return Status::Errorf("slurmrestd /nodes: unexpected answer: {}", e.what());
  }
  return out;
}

Result<std::vector<SlurmJob>> RestClient::ParseJobs(const std::string& body) {
  // A job carries some 150 fields and the operator reads 19: the others are dropped while
  // parsing, which keeps a 10,000-job listing from taking hundreds of MiB as a document.
  // The jobs' (and errors') objects are 3 containers deep.
  static const std::set<std::string> kKept = {"job_id",
                                              "user_name",
                                              "job_state",
                                              "state_reason",
                                              "partition",
                                              "nodes",
                                              "submit_time",
                                              "start_time",
                                              "node_count",
                                              "cpus",
                                              "minimum_cpus_per_node",
                                              "memory_per_node",
                                              "memory_per_cpu",
                                              "tres_per_node",
                                              "shared",
                                              "exclusive",
                                              "array_task_string",
                                              "array_max_tasks",
                                              "restart_cnt",
                                              "dependency",
                                              "priority",
                                              "error"};
  json j = ParseKeeping(body, 3, kKept);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /jobs: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  std::vector<SlurmJob> out;
  try {
    for (const auto& x : j.at("jobs")) {
      SlurmJob job;
      job.job_id = Int(x, "job_id");
      job.user = Str(x, "user_name");
      job.state = State(x, "job_state");
      auto states = Strings(x, "job_state");
      job.configuring = std::find(states.begin(), states.end(), "CONFIGURING") != states.end();
      job.reason = Str(x, "state_reason");
      job.partition = Str(x, "partition");
      job.nodes = Str(x, "nodes");
      job.submit_time = Int(x, "submit_time");
      job.start_time = Int(x, "start_time");
      job.node_count = static_cast<int>(std::max<int64_t>(1, Int(x, "node_count")));
      job.cpus = static_cast<int>(std::max<int64_t>(1, Int(x, "cpus")));
      job.min_cpus_per_node = static_cast<int>(std::max<int64_t>(1, Int(x, "minimum_cpus_per_node")));
      job.memory_per_node = Int(x, "memory_per_node");
      job.memory_per_cpu = Int(x, "memory_per_cpu");
      job.gpus_per_node = GpusIn(Str(x, "tres_per_node"));
      // v0.0.38: "shared": "none"; later: "shared": ["none"] or "exclusive": ["true"].
      auto shared = Strings(x, "shared");
      auto exclusive = Strings(x, "exclusive");
      job.exclusive = std::find(shared.begin(), shared.end(), "none") != shared.end() ||
                      std::find(exclusive.begin(), exclusive.end(), "true") != exclusive.end();
      job.array_task_string = Str(x, "array_task_string");
      job.array_max_tasks = static_cast<int>(Int(x, "array_max_tasks"));
      job.restart_count = static_cast<int>(Int(x, "restart_cnt"));
      job.dependency = Str(x, "dependency");
      auto priority = Number(x, "priority");
      job.priority = priority ? static_cast<int64_t>(*priority) : -1;
      out.push_back(std::move(job));
    }
  } catch (const json::exception& e) {
    return Status::Errorf("slurmrestd /jobs: unexpected answer: {}", e.what());
  }
  return out;
}

}  // namespace hpc::slurm
