#include "agent/agent.h"

#include <httplib.h>

#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/job_output.h"
#include "agent/live_cluster_reader.h"
#include "agent/sacct.h"
#include "common/files.h"
#include "common/http_client.h"
#include "common/jwt.h"
#include "messages/relay_messages.h"
#include "slurm/rest_client.h"

namespace hpc::cp {
using nlohmann::json;

Agent::Agent(DataPlaneAccess* data_plane, AgentOptions opts)
    : dp_(data_plane),
      opts_(std::move(opts)),
      terminals_(data_plane, {opts_.server, opts_.token, opts_.ca_file,
                              opts_.data_plane.empty() ? data_plane->ClusterName() : opts_.data_plane}),
      labs_(data_plane, {opts_.server, opts_.token, opts_.ca_file,
                         opts_.data_plane.empty() ? data_plane->ClusterName() : opts_.data_plane}) {
  if (opts_.data_plane.empty()) opts_.data_plane = dp_->ClusterName();
}

Status Agent::Post(const std::string& path, const std::string& body) {
  auto client = HttpClientFor(opts_.server, opts_.ca_file);
  httplib::Client& cli = *client;
  cli.set_connection_timeout(3);
  cli.set_read_timeout(30);
  cli.set_bearer_token_auth(opts_.token);
  auto res = cli.Post(path, body, "application/json");
  if (!res) return Status::Errorf("control plane {}: {}", opts_.server, httplib::to_string(res.error()));
  if (res->status != 200)
    return Status::Errorf("control plane {} {}: {} {}", opts_.server, path, res->status, res->body);
  return Status::Ok();
}

Result<std::string> Agent::Get(const std::string& path) {
  auto client = HttpClientFor(opts_.server, opts_.ca_file);
  httplib::Client& cli = *client;
  cli.set_connection_timeout(3);
  cli.set_read_timeout(30);
  cli.set_bearer_token_auth(opts_.token);
  auto res = cli.Get(path);
  if (!res) return Status::Errorf("control plane {}: {}", opts_.server, httplib::to_string(res.error()));
  if (res->status != 200)
    return Status::Errorf("control plane {} {}: {} {}", opts_.server, path, res->status, res->body);
  return res->body;
}

Result<std::optional<std::pair<int64_t, int64_t>>> Agent::FindSubmitted(const std::string& id, const std::string& user,
                                                                        int64_t since) {
  // Queued or running jobs, then finished ones (slurmdbd keeps the comment). Only a job of the
  // submission's own user counts: anyone can put that comment on a job of theirs.
  ASSIGN_OR_RETURN(std::string queued, dp_->InController({"squeue", "-h", "-a", "-t", "all", "-o", "%i|%V|%u|%k"}));
  ASSIGN_OR_RETURN(std::string done,
                   dp_->InController({"sacct", "-n", "-X", "-P", "-a", "--starttime=" + SacctTime(since - 60),
                                      "--format=JobIDRaw,Submit,User,Comment"}));
  return MatchSubmittedJob(queued + "\n" + done, id, user);
}

std::optional<std::pair<int64_t, int64_t>> MatchSubmittedJob(const std::string& listing, const std::string& id,
                                                             const std::string& user) {
  const std::string tag = "hpcplane-submission:" + id;
  std::istringstream in(listing);
  std::string line;
  while (std::getline(in, line)) {
    // id|submit|user|comment; the comment is last and may itself hold '|'.
    auto a = line.find('|');
    auto b = a == std::string::npos ? a : line.find('|', a + 1);
    auto c = b == std::string::npos ? b : line.find('|', b + 1);
    if (c == std::string::npos || line.substr(c + 1) != tag || line.substr(b + 1, c - b - 1) != user) continue;
    return std::pair<int64_t, int64_t>(std::atoll(line.c_str()), std::atoll(line.c_str() + a + 1));
  }
  return std::nullopt;
}

Status Agent::RunSubmissions() {
  ASSIGN_OR_RETURN(std::string body, Get(fmt::format("/api/v1/dataplanes/{}/submissions", opts_.data_plane)));
  json pending = json::parse(body, nullptr, false);
  if (pending.is_discarded() || !pending.contains("submissions"))
    return Status::Error("submissions: answer is not JSON");
  for (const auto& sub : pending["submissions"]) {
    const std::string id = sub.value("id", "");
    auto report = [&](json result) {
      return Post(fmt::format("/api/v1/dataplanes/{}/submissions/{}", opts_.data_plane, id), result.dump());
    };
    ASSIGN_OR_RETURN(auto w, dp_->FindWorkspace(sub.value("workspace", "")));
    if (!w || w->spec.stopping || w->spec.user.name != sub.value("user", "") ||
        w->spec.project != sub.value("project", "")) {
      RETURN_IF_ERROR(report(
          {{"state", "Failed"},
           {"error", fmt::format("workspace {} of user {} in project {} is not running here",
                                 sub.value("workspace", ""), sub.value("user", ""), sub.value("project", ""))}}));
      continue;
    }
    ASSIGN_OR_RETURN(auto found, FindSubmitted(id, w->spec.user.name, sub.value("createdAt", int64_t{0})));
    if (!found) {
      // As the user, with the workspace's token: never as root.
      std::vector<std::string> argv = {"sbatch", "--parsable", "--comment=hpcplane-submission:" + id};
      for (const auto& a : sub.value("sbatchArgs", std::vector<std::string>{})) argv.push_back(a);
      ASSIGN_OR_RETURN(ProcessResult r, dp_->InWorkspace(*w, argv, sub.value("script", "")));
      if (!r.ok()) {
        std::string err = r.err;
        while (!err.empty() && err.back() == '\n') err.pop_back();
        RETURN_IF_ERROR(report({{"state", "Failed"}, {"error", err}}));
        continue;
      }
      ASSIGN_OR_RETURN(found, FindSubmitted(id, w->spec.user.name, sub.value("createdAt", int64_t{0})));
      if (!found) return Status::Errorf("submission {}: sbatch said {} but Slurm does not list the job yet", id, r.out);
    }
    RETURN_IF_ERROR(report({{"state", "Submitted"},
                            {"cluster", dp_->ClusterName()},
                            {"jobId", found->first},
                            {"submitTime", found->second}}));
    spdlog::info("submission {}: job {} for {} in {}", id, found->first, sub.value("user", ""),
                 sub.value("workspace", ""));
  }
  return Status::Ok();
}

Status Agent::RunCancellations() {
  ASSIGN_OR_RETURN(std::string body, Get(fmt::format("/api/v1/dataplanes/{}/cancellations", opts_.data_plane)));
  json pending = json::parse(body, nullptr, false);
  if (pending.is_discarded() || !pending.contains("cancellations"))
    return Status::Error("cancellations: answer is not JSON");
  if (pending["cancellations"].empty()) return Status::Ok();
  // One listing of the queue for the batch (a job id Slurm no longer knows would fail `squeue
  // -j`): id -> "user|submit time|state".
  ASSIGN_OR_RETURN(std::string listing, dp_->InController({"squeue", "-h", "-a", "-t", "all", "-o", "%i|%u|%V|%T"}));
  std::map<int64_t, std::string> queue;
  std::istringstream lines(listing);
  for (std::string line; std::getline(lines, line);) {
    auto bar = line.find('|');
    if (bar != std::string::npos) queue[std::atoll(line.c_str())] = line.substr(bar + 1);
  }
  static const std::set<std::string> kLive = {"PENDING",      "RUNNING",     "SUSPENDED", "REQUEUED",
                                              "REQUEUE_HOLD", "CONFIGURING", "RESIZING"};
  for (const auto& c : pending["cancellations"]) {
    const std::string id = c.value("id", "");
    const int64_t job = c.value("jobId", int64_t{0});
    auto report = [&](const std::string& state, const std::string& note) {
      return Post(fmt::format("/api/v1/dataplanes/{}/cancellations/{}", opts_.data_plane, id),
                  json{{"state", state}, {"error", note}}.dump());
    };
    if (c.value("cluster", "") != dp_->ClusterName()) {
      RETURN_IF_ERROR(report("Failed", fmt::format("job {} ran on cluster {}, not on this data plane's {}", job,
                                                   c.value("cluster", ""), dp_->ClusterName())));
      continue;
    }
    const std::string same = fmt::format("{}|{}|", c.value("user", ""), c.value("submitTime", int64_t{0}));
    auto it = queue.find(job);
    if (it == queue.end() || it->second.rfind(same, 0) != 0) {
      // Gone from the queue, or the id now names a later job: the job asked about has ended.
      RETURN_IF_ERROR(report("Done", fmt::format("job {} had already ended", job)));
      continue;
    }
    const std::string state = it->second.substr(same.size());
    if (!kLive.count(state)) {
      RETURN_IF_ERROR(report("Done", fmt::format("job {} had already ended ({})", job, state)));
      continue;
    }
    ASSIGN_OR_RETURN(std::string out, dp_->InController({"scancel", std::to_string(job)}));
    RETURN_IF_ERROR(report("Done", ""));
    spdlog::info("cancellation {}: job {} of {} cancelled (asked by {})", id, job, c.value("user", ""),
                 c.value("requestedBy", ""));
  }
  return Status::Ok();
}

Status Agent::Report() {
  DataPlaneAccess::Health h = dp_->CheckHealth();
  healthy_ = h.healthy;
  serving_controller_ = h.leading_controller;
  json body = {{"state", h.healthy ? "Healthy" : "Degraded"},
               {"reasons", h.reasons},
               {"componentVersions", h.component_versions}};
  body["componentVersions"]["hpcplane"] = HPCPLANE_VERSION;
  return Post(fmt::format("/api/v1/dataplanes/{}/report", opts_.data_plane), body.dump());
}

Result<std::string> Agent::NodesJson() {
  if (!nodes_from_sinfo_) {
    auto out = dp_->InController({"scontrol", "show", "nodes", "--json"});
    if (out.ok() || out.status().message().find("unrecognized option") == std::string::npos) return out;
    // Slurm 22.05: scontrol has no --json, and sinfo --json prints the node list instead.
    nodes_from_sinfo_ = true;
  }
  return dp_->InController({"sinfo", "--json"});
}

Status Agent::ReportLiveCluster() {
  ASSIGN_OR_RETURN(std::string nodes_json, NodesJson());
  ASSIGN_OR_RETURN(auto nodes, slurm::RestClient::ParseNodes(nodes_json));
  ASSIGN_OR_RETURN(std::string partitions_text, dp_->InController(LivePartitionsCommand()));
  ASSIGN_OR_RETURN(auto partitions, ParseLivePartitions(partitions_text));
  ASSIGN_OR_RETURN(std::string queue_text, dp_->InController(LiveQueueCommand()));
  int64_t queue_total = 0;
  ASSIGN_OR_RETURN(auto queue, ParseLiveQueue(queue_text, &queue_total));
  ASSIGN_OR_RETURN(auto nodesets, dp_->NodeSets());
  LiveCluster view =
      AssembleLiveCluster(nodes, partitions, std::move(queue), queue_total, std::move(nodesets), jwt::UnixNow());
  // Every controller and whether it answers (a hung one costs this report Slurm's MessageTimeout;
  // none answering leaves them out, and the rest of the view stands).
  auto ping = dp_->InController({"scontrol", "ping"});
  view.controllers = ParseControllerPing(ping.ok() ? *ping : "", serving_controller_);
  return Post(fmt::format("/api/v1/dataplanes/{}/live", opts_.data_plane), EncodeLiveCluster(std::move(view)));
}

Status Agent::SyncJobs() {
  int64_t now = jwt::UnixNow();
  int64_t start = now - opts_.first_window_seconds;
  if (auto saved = files::Read(opts_.cursor_file); saved.ok()) {
    json j = json::parse(*saved, nullptr, false);
    if (!j.is_discarded()) start = j.value("windowStart", start);
  }
  // Records slurmctld has not handed to slurmdbd yet will carry times inside this window.
  ASSIGN_OR_RETURN(std::string sdiag, dp_->InController({"sdiag"}));
  static const std::regex queue(R"(DBD Agent queue size:\s*(\d+))");
  std::smatch m;
  int64_t queued = std::regex_search(sdiag, m, queue) ? std::atoll(m[1].str().c_str()) : -1;
  ASSIGN_OR_RETURN(std::string out, dp_->InController(SacctWindowArgs(start, now)));
  ASSIGN_OR_RETURN(auto jobs, ParseSacct(out, opts_.data_plane));
  ASSIGN_OR_RETURN(std::string cancelled_out, dp_->InController(SacctWindowArgs(start, now, true)));
  ASSIGN_OR_RETURN(auto cancelled, ParseSacct(cancelled_out, opts_.data_plane));
  jobs.insert(jobs.end(), cancelled.begin(), cancelled.end());  // the store upserts duplicates away
  for (size_t i = 0; i < jobs.size(); i += opts_.batch_size) {
    json batch = json::array();
    for (size_t k = i; k < std::min(jobs.size(), i + opts_.batch_size); ++k) batch.push_back(ToJson(jobs[k]));
    RETURN_IF_ERROR(Post(fmt::format("/api/v1/dataplanes/{}/jobs", opts_.data_plane), json{{"jobs", batch}}.dump()));
  }
  if (queued == 0) {
    int64_t next = std::max(start, now - opts_.overlap_seconds);
    RETURN_IF_ERROR(files::WriteAtomic(opts_.cursor_file, json{{"windowStart", next}}.dump() + "\n", 0600));
  }
  if (!jobs.empty()) spdlog::debug("agent: shipped {} job records from [{}, {})", jobs.size(), start, now);
  return Status::Ok();
}

namespace {

// A handler of one kind of relayed request: decodes it with `decode` and serves it with `serve`;
// a request that does not decode is answered with why.
template <typename Message>
std::function<json(const json&)> Serve(Result<Message> (*decode)(const json&),
                                       std::function<json(const Message&)> serve) {
  return [decode, serve = std::move(serve)](const json& request) {
    auto message = decode(request);
    if (!message.ok()) return RelayError(Status::Unavailable("request: " + message.status().message()));
    return serve(*message);
  };
}

}  // namespace

std::map<RelayKind, std::function<json(const json&)>> Agent::RelayHandlers() {
  return {
      {RelayKind::kJobOutput,
       Serve<JobOutputRequest>(JobOutputRequestFromJson, [this](const auto& r) { return ReadJobOutput(dp_, r); })},
      {RelayKind::kTerminalOpen,
       Serve<TerminalOpen>(TerminalOpenFromJson, [this](const auto& r) { return terminals_.Open(r); })},
      {RelayKind::kTerminalSocket,
       Serve<TerminalSocket>(TerminalSocketFromJson, [this](const auto& r) { return terminals_.OpenSocket(r); })},
      {RelayKind::kLabHttp, Serve<LabHttp>(LabHttpFromJson, [this](const auto& r) { return labs_.Request(r); })},
      {RelayKind::kLabSocket, Serve<LabSocket>(LabSocketFromJson, [this](const auto& r) { return labs_.Socket(r); })},
  };
}

json Agent::HandleRelayed(const json& request) {
  auto kind = RelayKindOf(request);
  auto handler = kind.ok() ? relay_handlers_.find(*kind) : relay_handlers_.end();
  if (handler == relay_handlers_.end()) {
    // A newer server's kind, or none: said, never dropped (the caller would wait for nothing).
    return RelayError(Status::Unavailable(fmt::format("data plane {}'s agent (an older one?): {}", opts_.data_plane,
                                                      kind.ok() ? RelayKindName(*kind) : kind.status().message())));
  }
  return handler->second(request);
}

Status Agent::ServeRelay(std::chrono::seconds wait) {
  auto client = HttpClientFor(opts_.server, opts_.ca_file);
  client->set_connection_timeout(3);
  client->set_read_timeout(static_cast<time_t>(wait.count()) + 10);
  client->set_bearer_token_auth(opts_.token);
  {
    std::lock_guard<std::mutex> lock(relay_mu_);
    if (relay_stopping_) return Status::Ok();
    relay_client_ = client.get();
  }
  auto res = client->Get(fmt::format("/api/v1/dataplanes/{}/relay?wait={}", opts_.data_plane, wait.count()));
  {
    std::lock_guard<std::mutex> lock(relay_mu_);
    relay_client_ = nullptr;
  }
  if (!res) return Status::Errorf("control plane {}: {}", opts_.server, httplib::to_string(res.error()));
  if (res->status != 200) return Status::Errorf("control plane {} relay: {} {}", opts_.server, res->status, res->body);
  json body = json::parse(res->body, nullptr, false);
  if (!body.is_object() || !body.contains("requests") || !body["requests"].is_array()) {
    return Status::Errorf("control plane {} relay: not a list of requests", opts_.server);
  }
  for (const auto& request : body["requests"]) {
    if (!request.is_object() || !request.contains("id") || !request["id"].is_string()) continue;
    // Each on a thread of the pool: a request that takes long (JupyterLab starting, a large
    // file) holds up none of the others.
    relay_workers_->enqueue([this, request] {
      const std::string id = request["id"].get<std::string>();
      const json answer = HandleRelayed(request);
      Status posted = Post(fmt::format("/api/v1/dataplanes/{}/relay/{}", opts_.data_plane, id),
                           answer.dump(-1, ' ', false, json::error_handler_t::replace));
      // A caller that gave up meanwhile is not this agent's failure.
      if (!posted.ok() && posted.message().find(": 404 ") == std::string::npos) {
        spdlog::warn("relay: answer not delivered: {}", posted.message());
      }
    });
  }
  return Status::Ok();
}

void Agent::RelayLoop(const std::atomic<bool>& stop) {
  while (!stop) {
    Status s = ServeRelay(std::chrono::seconds(20));
    if (s.ok()) continue;
    spdlog::warn("relay: {}", s.message());
    for (int i = 0; i < 20 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

void Agent::Run(const std::atomic<bool>& stop) {
  spdlog::info("agent for data plane {} (cluster {}) reporting to {}", opts_.data_plane, dp_->ClusterName(),
               opts_.server);
  std::thread relay([this, &stop] { RelayLoop(stop); });
  while (!stop) {
    auto started = std::chrono::steady_clock::now();
    if (Status s = Report(); !s.ok()) spdlog::warn("report: {}", s.message());
    // Slurm is read only while the operator says it is up or a controller serves (a backup in
    // the primary's stead: what the live view shows then matters most), not while it starts.
    if (Status s = healthy_ || !serving_controller_.empty() ? ReportLiveCluster() : Status::Ok(); !s.ok()) {
      spdlog::warn("live cluster: {}", s.message());
    }
    if (Status s = ApplyWorkspaces(); !s.ok()) spdlog::warn("workspaces: {}", s.message());
    if (Status s = RunSubmissions(); !s.ok()) spdlog::warn("submissions: {}", s.message());
    if (Status s = RunCancellations(); !s.ok()) spdlog::warn("cancellations: {}", s.message());
    if (Status s = SyncJobs(); !s.ok()) spdlog::warn("jobs: {}", s.message());
    auto next = started + std::chrono::seconds(opts_.interval_seconds);
    while (!stop && std::chrono::steady_clock::now() < next)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  {
    std::lock_guard<std::mutex> lock(relay_mu_);
    relay_stopping_ = true;
    if (relay_client_) relay_client_->stop();
  }
  relay.join();
  labs_.StopAll();  // its sockets close, so requests waiting on them end
  relay_workers_->shutdown();
  terminals_.StopAll();
}

}  // namespace hpc::cp
