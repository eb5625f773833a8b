#include "slurm/rest_client.h"

#include "slurm/json_filter.h"

#include <algorithm>
#include <cctype>
#include <set>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace hpc::slurm {
using nlohmann::json;

namespace {
constexpr const char* kApi = "/slurm/v0.0.38";

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
std::string Upper(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::toupper(c); });
  return s;
}

// Integers slurmrestd may send as null or as Slurm's NO_VAL/INFINITE sentinels: 0 then.
int64_t Int(const json& obj, const char* key) {
  auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return 0;
  double v = it->get<double>();
  if (v < 0 || v >= 4294967294.0) return 0;
  return static_cast<int64_t>(v);
}

std::string Str(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// GPUs per node in a TRES string such as "gres:gpu:2", "gres/gpu=2" or "gres:gpu:a100:1".
int GpusIn(const std::string& tres) {
  auto pos = tres.find("gpu");
  if (pos == std::string::npos) return 0;
  auto sep = tres.find_last_of(":=");
  if (sep == std::string::npos || sep < pos) return 1;
  int n = std::atoi(tres.c_str() + sep + 1);
  return n > 0 ? n : 1;
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
  ASSIGN_OR_RETURN(std::string body, Get(std::string(kApi) + "/ping"));
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /ping: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  for (const auto& p : j.value("pings", json::array())) {
    if (p.value("ping", "") == "UP") {
      std::string release = j["meta"]["Slurm"].value("release", "");
      return release.empty() ? std::string("unknown") : release;
    }
  }
  return Status::Error("slurmrestd /ping: slurmctld is not UP");
}

Result<std::vector<SlurmNode>> RestClient::Nodes() {
  ASSIGN_OR_RETURN(std::string body, Get(std::string(kApi) + "/nodes"));
  return ParseNodes(body);
}

Result<std::vector<SlurmJob>> RestClient::Jobs() {
  ASSIGN_OR_RETURN(std::string body, Get(std::string(kApi) + "/jobs"));
  return ParseJobs(body);
}

Result<std::vector<SlurmPartition>> RestClient::Partitions() {
  ASSIGN_OR_RETURN(std::string body, Get(std::string(kApi) + "/partitions"));
  return ParsePartitions(body);
}

Result<std::vector<SlurmPartition>> RestClient::ParsePartitions(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /partitions: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  std::vector<SlurmPartition> out;
  try {
    for (const auto& p : j.at("partitions")) out.push_back({Str(p, "name"), Upper(Str(p, "state"))});
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
      node.state = Lower(Str(n, "state").empty() ? "unknown" : Str(n, "state"));
      for (const auto& f : n.value("state_flags", json::array())) node.flags.insert(Upper(f.get<std::string>()));
      node.reason = Str(n, "reason");
      node.reason_set_by = Str(n, "reason_set_by_user");
      node.reason_changed_at = Int(n, "reason_changed_at");
      node.extra = Str(n, "extra");
      std::string features = Str(n, "features");
      size_t start = 0;
      while (start < features.size()) {
        size_t comma = features.find(',', start);
        if (comma == std::string::npos) comma = features.size();
        if (comma > start) node.features.insert(features.substr(start, comma - start));
        start = comma + 1;
      }
      for (const auto& p : n.value("partitions", json::array())) node.partitions.insert(p.get<std::string>());
      node.cpus = static_cast<int>(Int(n, "cpus"));
      node.alloc_cpus = static_cast<int>(Int(n, "alloc_cpus"));
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
      job.state = Str(x, "job_state");
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
      job.exclusive = Str(x, "shared") == "none";
      job.array_task_string = Str(x, "array_task_string");
      job.array_max_tasks = static_cast<int>(Int(x, "array_max_tasks"));
      job.restart_count = static_cast<int>(Int(x, "restart_cnt"));
      job.dependency = Str(x, "dependency");
      job.priority = x.contains("priority") && x["priority"].is_number_integer() ? x["priority"].get<int64_t>() : -1;
      out.push_back(std::move(job));
    }
  } catch (const json::exception& e) {
    return Status::Errorf("slurmrestd /jobs: unexpected answer: {}", e.what());
  }
  return out;
}

}  // namespace hpc::slurm
