#include "slurm/rest_client.h"

#include <algorithm>
#include <cctype>

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

// Errors slurmrestd reports inside a 200 answer.
Status BodyErrors(const json& j) {
  if (j.contains("errors") && j["errors"].is_array() && !j["errors"].empty()) {
    const auto& e = j["errors"][0];
    return Status::Errorf("slurmrestd: {}", e.value("error", e.dump()));
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

Result<std::vector<SlurmNode>> RestClient::ParseNodes(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /nodes: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  std::vector<SlurmNode> out;
  try {
    for (const auto& n : j.at("nodes")) {
      SlurmNode node;
      node.name = n.at("name").get<std::string>();
      node.state = Lower(n.value("state", "unknown"));
      for (const auto& f : n.value("state_flags", json::array())) node.flags.insert(Upper(f.get<std::string>()));
      node.reason = n.value("reason", "");
      std::string features = n.value("features", "");
      size_t start = 0;
      while (start < features.size()) {
        size_t comma = features.find(',', start);
        if (comma == std::string::npos) comma = features.size();
        if (comma > start) node.features.insert(features.substr(start, comma - start));
        start = comma + 1;
      }
      node.cpus = n.value("cpus", 0);
      node.alloc_cpus = n.value("alloc_cpus", 0);
      out.push_back(std::move(node));
    }
  } catch (const json::exception& e) {
    return Status::Errorf("slurmrestd /nodes: unexpected answer: {}", e.what());
  }
  return out;
}

Result<std::vector<SlurmJob>> RestClient::ParseJobs(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("slurmrestd /jobs: answer is not JSON");
  RETURN_IF_ERROR(BodyErrors(j));
  std::vector<SlurmJob> out;
  try {
    for (const auto& x : j.at("jobs")) {
      SlurmJob job;
      job.job_id = x.at("job_id").get<int64_t>();
      job.user = x.value("user_name", "");
      job.state = x.value("job_state", "");
      job.reason = x.value("state_reason", "");
      job.partition = x.value("partition", "");
      job.nodes = x.value("nodes", "");
      job.submit_time = x.value("submit_time", int64_t{0});
      job.start_time = x.value("start_time", int64_t{0});
      out.push_back(std::move(job));
    }
  } catch (const json::exception& e) {
    return Status::Errorf("slurmrestd /jobs: unexpected answer: {}", e.what());
  }
  return out;
}

}  // namespace hpc::slurm
