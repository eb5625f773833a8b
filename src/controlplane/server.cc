#include "controlplane/server.h"

#include <httplib.h>

#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "api/codec.h"
#include "common/jwt.h"
#include "controlplane/http_api.h"
#include "controlplane/cancel_routes.h"
#include "controlplane/console_routes.h"
#include "controlplane/openapi.h"
#include "controlplane/workspace_routes.h"

namespace hpc::cp {
using nlohmann::json;
using http::Body;
using http::Error;
using http::Ok;
using http::kMaxUnixSeconds;

namespace {

bool ValidName(const std::string& s) {
  static const std::regex re("^[a-z][a-z0-9-]{0,62}$");
  return std::regex_match(s, re);
}

json DataPlaneJson(const DataPlane& dp) {
  bool slurm = dp.OffersSlurm();
  return {{"name", dp.name},
          {"state", dp.state},
          {"reasons", dp.reasons},
          {"componentVersions", dp.component_versions},
          {"lastReport", dp.last_report},
          {"registeredAt", dp.registered_at},
          // Slurm options are offered only where Slurm is known to be there and healthy.
          {"slurm", {{"offered", slurm}, {"version", slurm ? dp.component_versions.at("slurm/slurmctld") : ""}}}};
}

constexpr int64_t kMaxTokenTtlSeconds = 3650LL * 86400;

json TokenJson(const TokenInfo& t) {
  return {{"id", t.id},
          {"subject", t.principal.subject},
          {"role", RoleName(t.principal.role)},
          {"projects", t.principal.projects},
          {"createdAt", t.created_at},
          {"createdBy", t.created_by},
          {"expiresAt", t.expires_at ? json(t.expires_at) : json(nullptr)},
          {"lastUsed", t.last_used ? json(t.last_used) : json(nullptr)},
          {"revokedAt", t.revoked_at ? json(t.revoked_at) : json(nullptr)}};
}

json SubmissionJson(const Submission& x) {
  return {{"id", x.id},       {"dataPlane", x.data_plane}, {"project", x.project}, {"workspace", x.workspace},
          {"user", x.user},   {"state", x.state},          {"cluster", x.cluster}, {"jobId", x.job_id},
          {"submitTime", x.submit_time}, {"error", x.error}, {"createdAt", x.created_at}};
}

// The sbatch options the API accepts, each value one safe token.
Result<std::vector<std::string>> SbatchArgs(const json& options) {
  static const std::map<std::string, std::string> allowed = {
      {"jobName", "--job-name"}, {"nodes", "--nodes"},   {"ntasks", "--ntasks"}, {"cpusPerTask", "--cpus-per-task"},
      {"mem", "--mem"},          {"time", "--time"},     {"array", "--array"},   {"output", "--output"},
      {"error", "--error"}};
  static const std::regex value("^[A-Za-z0-9_.:/%=,+@-]{1,200}$");
  if (!options.is_object()) return Status::InvalidArgument("options", "must be an object");
  std::vector<std::string> out;
  for (auto it = options.begin(); it != options.end(); ++it) {
    auto a = allowed.find(it.key());
    if (a == allowed.end()) return Status::InvalidArgument("options." + it.key(), "unknown option");
    std::string v = it.value().is_string() ? it.value().get<std::string>()
                    : it.value().is_number_integer() ? std::to_string(it.value().get<int64_t>()) : "";
    if (!std::regex_match(v, value)) {
      return Status::InvalidArgument("options." + it.key(), "must be one token of letters, digits and _.:/%=,+@-");
    }
    out.push_back(a->second + "=" + v);
  }
  return out;
}

}  // namespace

Server::Server(Store* store, ServerOptions opts)
    : store_(store), opts_(std::move(opts)), limiter_(opts_.max_failed_signins), watchdog_(opts_.connections) {
  if (opts_.tls_cert.empty() != opts_.tls_key.empty()) {
    init_ = Status::Error("TLS needs both --tls-cert and --tls-key");
  } else if (!opts_.tls_cert.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(opts_.tls_cert.c_str(), opts_.tls_key.c_str());
    if (!tls->is_valid()) {
      init_ = Status::Errorf("TLS: cannot load certificate {} with key {} (PEM files, the key matching the certificate)",
                             opts_.tls_cert, opts_.tls_key);
    }
    http_ = std::move(tls);
  }
  if (!http_) http_ = std::make_unique<httplib::Server>();
  auth_ = std::make_unique<http::Auth>(store_, &limiter_, &sessions_);
  // A request whose handler runs has been read whole: from then on it is being served (an export
  // may stream for long) and the watchdog's deadline no longer applies to it.
  routes_ = std::make_unique<RouteTable>(
      *http_, [w = &watchdog_](const httplib::Request& req) { w->RequestStarted(req.remote_addr, req.remote_port); });
  metrics_ = std::make_unique<ServerMetrics>(store_, opts_.unreachable_after_seconds, &watchdog_);
  store_->ObserveOperations([m = metrics_.get()](double seconds, bool ok) { m->StoreOperation(seconds, ok); });
  Routes();
}

Server::~Server() = default;

Result<ServerOptions> ParseListenAddress(const std::string& host_port) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::Errorf("listen address: expected HOST:PORT (got \"{}\")", host_port);
  }
  auto port = http::ParseInteger(host_port.substr(colon + 1), 0, 65535);
  if (!port) return Status::Errorf("listen address: port must be 0-65535 (got \"{}\")", host_port.substr(colon + 1));
  ServerOptions o;
  o.host = host_port.substr(0, colon);
  o.port = static_cast<int>(*port);
  return o;
}

namespace {
// When the request this connection thread serves had its headers read.
std::chrono::steady_clock::time_point& RequestStart() {
  thread_local std::chrono::steady_clock::time_point start;
  return start;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}
}  // namespace

Result<int> Server::Bind() {
  RETURN_IF_ERROR(init_);
  if (opts_.tls_cert.empty() && !opts_.allow_plain_http && !IsLoopbackHost(opts_.host)) {
    return Status::Errorf(
        "refusing plain HTTP on {}: API tokens would cross the network in clear text; give --tls-cert and "
        "--tls-key, or --allow-plain-http behind a TLS-terminating proxy",
        opts_.host);
  }
  int port = opts_.port == 0 ? http_->bind_to_any_port(opts_.host) : (http_->bind_to_port(opts_.host, opts_.port) ? opts_.port : -1);
  if (port < 0) return Status::Errorf("cannot listen on {}:{}", opts_.host, opts_.port);
  if (WidenListenBacklog(port, 1024) == 0) spdlog::warn("listen backlog of port {} left at the HTTP library's 5", port);
  watchdog_.Start(port, opts_.tls_cert.empty());
  return port;
}

void Server::Serve() { http_->listen_after_bind(); }
void Server::Stop() {
  http_->stop();
  watchdog_.Stop();
}

Result<std::string> BootstrapToken(Store* store, const std::string& subject, Role role,
                                   const std::vector<std::string>& projects) {
  ASSIGN_OR_RETURN(std::string token, jwt::NewApiToken());
  RETURN_IF_ERROR(store->PutToken(jwt::Sha256Hex(token), {subject, role, projects}));
  return token;
}

void Server::Routes() {
  auto& s = *routes_;
  Store* store = store_;
  http::Auth* authn = auth_.get();
  ServerMetrics* metrics = metrics_.get();
  const int unreachable_after = opts_.unreachable_after_seconds;

  auto auth = [authn](const httplib::Request& req, httplib::Response& res) { return authn->Authenticate(req, res); };

  // Prometheus' scrape: admins, or a token of role metrics (which reads nothing else).
  auto scrape_lock = std::make_shared<std::mutex>();
  s.Get("/metrics", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    if (p->role != Role::kAdmin && p->role != Role::kMetrics) return Error(res, 403, "metrics or admin role required");
    std::lock_guard<std::mutex> l(*scrape_lock);
    res.set_content(metrics->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });

  s.Get("/api/v1/openapi.json", [=](const httplib::Request& req, httplib::Response& res) {
    if (!auth(req, res)) return;
    res.set_content(kOpenApiDocument, "application/json");
  });

  s.Get("/api/v1/dataplanes", [=](const httplib::Request& req, httplib::Response& res) {
    if (!auth(req, res)) return;
    auto dps = store->DataPlanes();
    if (!dps.ok()) return Error(res, 503, dps.status().message());
    json out = json::array();
    int64_t now = jwt::UnixNow();
    for (auto dp : *dps) {
      if (now - dp.last_report > unreachable_after) {
        dp.state = "Unreachable";
        dp.reasons = {fmt::format("no report for {}s (last at {})", now - dp.last_report, dp.last_report)};
      }
      out.push_back(DataPlaneJson(dp));
    }
    Ok(res, {{"dataPlanes", out}});
  });

  s.Post(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/report)", [=](const httplib::Request& req, httplib::Response& res) {
    auto body = authn->AgentBody(req, res);
    if (!body) return;
    std::string name = req.matches[1];
    DataPlane dp;
    dp.name = name;
    dp.state = body->value("state", "");
    if (dp.state != "Healthy" && dp.state != "Degraded") {
      return Error(res, 400, "state must be Healthy or Degraded (got \"" + dp.state + "\")", "state");
    }
    try {
      dp.reasons = body->value("reasons", std::vector<std::string>{});
      dp.component_versions = body->value("componentVersions", std::map<std::string, std::string>{});
    } catch (const json::exception& e) {
      return Error(res, 400, std::string("reasons must be strings and componentVersions a string map: ") + e.what(),
                   "componentVersions");
    }
    dp.last_report = jwt::UnixNow();
    if (Status st = store->UpsertDataPlane(dp); !st.ok()) return Error(res, 503, st.message());
    Ok(res, {{"accepted", true}});
  });

  s.Post(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/jobs)", [=](const httplib::Request& req, httplib::Response& res) {
    auto body = authn->AgentBody(req, res);
    if (!body) return;
    std::string name = req.matches[1];
    if (!body->contains("jobs") || !(*body)["jobs"].is_array()) return Error(res, 400, "jobs must be an array", "jobs");
    std::vector<JobRecord> jobs;
    for (size_t i = 0; i < (*body)["jobs"].size(); ++i) {
      auto r = JobRecordFromJson((*body)["jobs"][i]);
      if (!r.ok()) return http::Error(res, r.status().InField(fmt::format("jobs[{}]", i)));
      r->data_plane = name;  // an agent speaks for its own data plane only
      jobs.push_back(std::move(*r));
    }
    if (Status st = store->UpsertJobs(jobs); !st.ok()) return Error(res, 503, st.message());
    metrics->Ingested(jobs.size());
    Ok(res, {{"upserted", jobs.size()}});
  });

  auto parse_filter = [](const httplib::Request& req, const std::string& project, JobFilter* f,
                         httplib::Response& res) {
    f->project = project;
    f->user = req.get_param_value("user");
    f->state = req.get_param_value("state");
    f->workspace = req.get_param_value("workspace");
    f->name_contains = req.get_param_value("name");
    if (f->name_contains.size() > 200) {
      http::Error(res, 400, "name must be at most 200 characters", "name");
      return false;
    }
    return http::IntegerParam(req, res, "from", 0, kMaxUnixSeconds, &f->from) &&
           http::IntegerParam(req, res, "to", 0, kMaxUnixSeconds, &f->to);
  };

  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs)", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    std::string project = req.matches[1];
    if (!http::RequireProject(*p, project, res)) return;
    JobFilter f;
    if (!parse_filter(req, project, &f, res)) return;
    int64_t limit = 100;
    if (!http::IntegerParam(req, res, "limit", 1, 1000, &limit)) return;
    std::optional<JobCursor> cursor;
    if (req.has_param("cursor")) {
      auto c = JobCursor::Decode(req.get_param_value("cursor"));
      if (!c.ok()) return Error(res, 400, c.status().message(), "cursor");
      cursor = *c;
    }
    auto page = store->ListJobs(f, cursor, limit);
    if (!page.ok()) return Error(res, 503, page.status().message());
    json jobs = json::array();
    for (const auto& j : page->jobs) jobs.push_back(ToJson(j));
    json out = {{"jobs", jobs}};
    out["nextCursor"] = page->next ? json(page->next->Encode()) : json(nullptr);
    Ok(res, out);
  });

  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs/export)", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    std::string project = req.matches[1];
    if (!http::RequireProject(*p, project, res)) return;
    auto f = std::make_shared<JobFilter>();
    if (!parse_filter(req, project, f.get(), res)) return;
    std::string format = req.has_param("format") ? req.get_param_value("format") : "ndjson";
    if (format != "ndjson" && format != "csv") return Error(res, 400, "format must be ndjson or csv", "format");
    bool csv = format == "csv";
    // Streamed in keyset pages: memory does not grow with the number of records.
    res.set_chunked_content_provider(csv ? "text/csv" : "application/x-ndjson",
                                     [store, f, csv](size_t, httplib::DataSink& sink) {
                                       if (csv) sink.write(CsvHeader().data(), CsvHeader().size());
                                       Status st = store->ExportJobs(*f, [&](const JobRecord& r) {
                                         std::string line = csv ? ToCsvLine(r) : ToJson(r).dump() + "\n";
                                         return sink.write(line.data(), line.size());
                                       });
                                       if (!st.ok()) spdlog::error("export: {}", st.message());
                                       sink.done();
                                       return true;
                                     });
  });

  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs/([a-z][a-z0-9-]*)/([a-z][a-z0-9-]*)/(\d+))",
        [=](const httplib::Request& req, httplib::Response& res) {
          auto p = auth(req, res);
          if (!p) return;
          std::string project = req.matches[1];
          if (!http::RequireProject(*p, project, res)) return;
          if (auto j = http::ProjectJob(store, req, project, res)) Ok(res, ToJson(*j));
        });

  // The batch script of a job submitted through the API: its user's and admins' only (scripts
  // can hold what other members should not read).
  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs/([a-z][a-z0-9-]*)/([a-z][a-z0-9-]*)/(\d+)/script)",
        [=](const httplib::Request& req, httplib::Response& res) {
          auto p = auth(req, res);
          if (!p) return;
          std::string project = req.matches[1];
          if (!http::RequireProject(*p, project, res)) return;
          auto j = http::ProjectJob(store, req, project, res);
          if (!j) return;
          if (j->user != p->subject && p->role != Role::kAdmin) {
            return Error(res, 403, fmt::format("job {} is {}'s; only they or an admin may read its script", j->job_id, j->user));
          }
          auto sub = store->SubmissionOfJob(j->data_plane, j->cluster, j->job_id, j->submit_time);
          if (!sub.ok()) return Error(res, 503, sub.status().message());
          if (!*sub) return Error(res, 404, fmt::format("job {} was not submitted through the API: no script is kept", j->job_id));
          Ok(res, {{"script", (*sub)->script}, {"sbatchArgs", (*sub)->sbatch_args}, {"submission", (*sub)->id}});
        });

  s.Post(R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs)", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    std::string project = req.matches[1];
    if (!http::RequireProject(*p, project, res)) return;
    auto flags = store->Flags();
    if (!flags.ok()) return Error(res, 503, flags.status().message());
    if (!flags->count(kFlagHpcJobs) || !flags->at(kFlagHpcJobs)) {
      return Error(res, 403, fmt::format("submitting HPC jobs through the API is disabled: flag {} is off", kFlagHpcJobs));
    }
    auto body = Body(req, res);
    if (!body) return;
    for (const char* field : {"workspace", "script"}) {
      if (!body->contains(field) || !(*body)[field].is_string() || (*body)[field].get<std::string>().empty()) {
        return Error(res, 400, std::string(field) + " is required (a non-empty string)", field);
      }
    }
    if (body->contains("dataPlane") && !(*body)["dataPlane"].is_string()) {
      return Error(res, 400, "dataPlane must be a string", "dataPlane");
    }
    Submission sub;
    sub.data_plane = body->value("dataPlane", "");
    sub.workspace = (*body)["workspace"];
    sub.script = (*body)["script"];
    sub.project = project;
    sub.user = p->subject;
    if (!ValidName(sub.workspace)) return Error(res, 400, "workspace must be a workspace id", "workspace");
    // A workspace the control plane launched names its data plane, and must be the caller's
    // and running; one launched on a data plane itself needs dataPlane and is checked there.
    auto launched = store->GetWorkspace(sub.workspace);
    if (!launched.ok()) return Error(res, 503, launched.status().message());
    if (*launched) {
      const WorkspaceRecord& w = **launched;
      if (w.project != project || w.user != sub.user || w.desired != "Running" ||
          (!sub.data_plane.empty() && sub.data_plane != w.data_plane)) {
        return Error(res, 409,
                     fmt::format("workspace {} is not a running workspace of {} in project {}{}", w.id, sub.user,
                                 project, sub.data_plane.empty() ? "" : " on data plane " + sub.data_plane),
                     "workspace");
      }
      sub.data_plane = w.data_plane;
    }
    if (sub.data_plane.empty()) {
      return Error(res, 400, "dataPlane is required for a workspace the control plane did not launch", "dataPlane");
    }
    if (sub.script.rfind("#!", 0) != 0 || sub.script.size() > (1 << 20)) {
      return Error(res, 400, "script must start with #! and be at most 1 MiB", "script");
    }
    auto args = SbatchArgs(body->value("options", json::object()));
    if (!args.ok()) return http::Error(res, args.status());
    sub.sbatch_args = *args;
    // Only data planes that are Healthy and report Slurm are offered Slurm work.
    if (!http::RequireSlurmDataPlane(store, sub.data_plane, unreachable_after, res)) return;
    auto id = jwt::RandomBytes(12);
    if (!id.ok()) return Error(res, 503, id.status().message());
    sub.id = jwt::Sha256Hex(*id).substr(0, 24);
    sub.created_at = jwt::UnixNow();
    if (Status st = store->PutSubmission(sub); !st.ok()) return Error(res, 503, st.message());
    authn->Audit(p->subject, req, "submission.create", project + "/" + sub.id,
                 fmt::format("workspace {} on data plane {}", sub.workspace, sub.data_plane));
    Ok(res, SubmissionJson(sub), 202);
  });

  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/submissions/([0-9a-f]+))", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    std::string project = req.matches[1];
    if (!http::RequireProject(*p, project, res)) return;
    auto sub = store->GetSubmission(req.matches[2]);
    if (!sub.ok()) return Error(res, 503, sub.status().message());
    if (!*sub || (*sub)->project != project) return Error(res, 404, "no such submission in project " + project);
    Ok(res, SubmissionJson(**sub));
  });

  s.Get(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/submissions)", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p || !http::RequireAgentFor(*p, req.matches[1], res)) return;
    auto subs = store->PendingSubmissions(req.matches[1]);
    if (!subs.ok()) return Error(res, 503, subs.status().message());
    json out = json::array();
    for (const auto& x : *subs) {
      json j = SubmissionJson(x);
      j["script"] = x.script;
      j["sbatchArgs"] = x.sbatch_args;
      out.push_back(j);
    }
    Ok(res, {{"submissions", out}});
  });

  s.Post(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/submissions/([0-9a-f]+))", [=](const httplib::Request& req, httplib::Response& res) {
    auto body = authn->AgentBody(req, res);
    if (!body) return;
    auto sub = store->GetSubmission(req.matches[2]);
    if (!sub.ok()) return Error(res, 503, sub.status().message());
    if (!*sub || (*sub)->data_plane != req.matches[1]) return Error(res, 404, "no such submission");
    Submission x = **sub;
    x.state = body->value("state", "");
    if (x.state != "Submitted" && x.state != "Failed") return Error(res, 400, "state must be Submitted or Failed", "state");
    x.error = body->value("error", "");
    if (x.state == "Submitted") {
      if (!(*body)["jobId"].is_number_integer() || !(*body)["submitTime"].is_number_integer() ||
          !(*body)["cluster"].is_string()) {
        return Error(res, 400, "jobId, submitTime and cluster are required for a submitted job", "jobId");
      }
      x.job_id = (*body)["jobId"];
      x.submit_time = (*body)["submitTime"];
      x.cluster = (*body)["cluster"];
      // The job enters the history now, marked as submitted through the API; the agent's
      // records fill in its statistics later and keep the mark.
      JobRecord r;
      r.data_plane = x.data_plane, r.cluster = x.cluster, r.job_id = x.job_id, r.submit_time = x.submit_time;
      r.user = x.user, r.project = x.project, r.partition = x.workspace, r.state = "PENDING", r.source = "api";
      if (Status st = store->UpsertJobs({r}); !st.ok()) return Error(res, 503, st.message());
    }
    if (Status st = store->PutSubmission(x); !st.ok()) return Error(res, 503, st.message());
    Ok(res, SubmissionJson(x));
  });

  s.Get("/api/v1/flags", [=](const httplib::Request& req, httplib::Response& res) {
    if (!auth(req, res)) return;
    auto flags = store->Flags();
    if (!flags.ok()) return Error(res, 503, flags.status().message());
    json out = {{kFlagHpcJobs, false}};
    for (const auto& [k, v] : *flags) out[k] = v;
    Ok(res, {{"flags", out}});
  });

  s.Put(R"(/api/v1/flags/([A-Za-z][A-Za-z0-9]*))", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p || !http::RequireAdmin(*p, res)) return;
    auto body = Body(req, res);
    if (!body) return;
    if (!body->contains("value") || !(*body)["value"].is_boolean()) return Error(res, 400, "value must be true or false", "value");
    if (Status st = store->SetFlag(req.matches[1], (*body)["value"].get<bool>()); !st.ok()) return Error(res, 503, st.message());
    authn->Audit(p->subject, req, "flag.set", req.matches[1], (*body)["value"].dump());
    Ok(res, {{"name", req.matches[1]}, {"value", (*body)["value"]}});
  });

  s.Post("/api/v1/tokens", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p || !http::RequireAdmin(*p, res)) return;
    auto body = Body(req, res);
    if (!body) return;
    if (body->contains("subject") && !(*body)["subject"].is_string()) return Error(res, 400, "subject must be a string", "subject");
    if (body->contains("role") && !(*body)["role"].is_string()) return Error(res, 400, "role must be a string", "role");
    std::string subject = body->value("subject", "");
    if (!ValidName(subject)) return Error(res, 400, "subject must be a lowercase name (got \"" + subject + "\")", "subject");
    auto role = ParseRole(body->value("role", ""));
    if (!role) return Error(res, 400, "role must be admin, user, agent or metrics", "role");
    std::vector<std::string> projects;
    if (body->contains("projects")) {
      if (!(*body)["projects"].is_array()) return Error(res, 400, "projects must be a list of names", "projects");
      for (const auto& pr : (*body)["projects"]) {
        if (!pr.is_string() || !ValidName(pr.get<std::string>())) return Error(res, 400, "projects must be a list of names", "projects");
        projects.push_back(pr.get<std::string>());
      }
    }
    TokenInfo t;
    t.principal = {subject, *role, projects};
    t.created_at = jwt::UnixNow();
    t.created_by = p->subject;
    if (body->contains("ttl")) {
      const json& ttl = (*body)["ttl"];
      auto seconds = ttl.is_string() ? api::ParseDurationSeconds(ttl.get<std::string>())
                     : ttl.is_number_unsigned() ? Result<int64_t>(ttl.get<int64_t>())
                                                : Result<int64_t>(Status::Error("not a duration"));
      if (!seconds.ok() || *seconds < 1 || *seconds > kMaxTokenTtlSeconds) {
        return Error(res, 400, "ttl must be a duration from 1s to 3650d (\"90m\", \"12h\", \"30d\" or seconds)", "ttl");
      }
      t.expires_at = t.created_at + *seconds;
    }
    auto token = jwt::NewApiToken();
    if (!token.ok()) return Error(res, 503, token.status().message());
    const std::string digest = jwt::Sha256Hex(*token);
    if (Status st = store->CreateToken(digest, t); !st.ok()) return Error(res, 503, st.message());
    t.id = digest.substr(0, 16);
    authn->Audit(p->subject, req, "token.create", t.id,
                 fmt::format("subject {} role {}{}", subject, RoleName(*role),
                             t.expires_at ? fmt::format(" expires {}", t.expires_at) : ""));
    json out = TokenJson(t);
    out["token"] = *token;  // the only time the secret is shown
    Ok(res, out, 201);
  });

  // Admins see every token; others their own. Never the secret or its digest.
  s.Get("/api/v1/tokens", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    auto tokens = store->ListTokens(p->role == Role::kAdmin ? "" : p->subject);
    if (!tokens.ok()) return Error(res, 503, tokens.status().message());
    json out = json::array();
    for (const auto& t : *tokens) out.push_back(TokenJson(t));
    Ok(res, {{"tokens", out}});
  });

  s.Delete(R"(/api/v1/tokens/([0-9a-f]{16}))", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    const std::string id = req.matches[1];
    // Others may revoke only their own; whether someone else's id exists is not told.
    if (p->role != Role::kAdmin) {
      auto own = store->ListTokens(p->subject);
      if (!own.ok()) return Error(res, 503, own.status().message());
      bool mine = std::any_of(own->begin(), own->end(), [&](const TokenInfo& t) { return t.id == id; });
      if (!mine) return Error(res, 404, "no token " + id + " of " + p->subject);
    }
    auto found = store->RevokeToken(id, jwt::UnixNow());
    if (!found.ok()) return Error(res, 503, found.status().message());
    if (!*found) return Error(res, 404, "no token " + id);
    authn->Audit(p->subject, req, "token.revoke", id);
    Ok(res, {{"id", id}, {"revoked", true}});
  });

  s.Get("/api/v1/audit", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p || !http::RequireAdmin(*p, res)) return;
    int64_t limit = 100, before = 0;
    if (!http::IntegerParam(req, res, "limit", 1, 1000, &limit) ||
        !http::IntegerParam(req, res, "before", 1, kMaxUnixSeconds * 1000000, &before)) {
      return;
    }
    auto entries = store->ListAudit(static_cast<int>(limit), before);
    if (!entries.ok()) return Error(res, 503, entries.status().message());
    json out = json::array();
    for (const auto& e : *entries) {
      out.push_back({{"atMicros", e.at_us}, {"at", e.at_us / 1000000}, {"actor", e.actor}, {"action", e.action},
                     {"target", e.target}, {"detail", e.detail}, {"remote", e.remote}});
    }
    json page = {{"entries", out}};
    page["nextBefore"] = static_cast<int64_t>(out.size()) == limit ? json(entries->back().at_us) : json(nullptr);
    Ok(res, page);
  });

  AddWorkspaceRoutes(s, authn, unreachable_after);
  AddConsoleRoutes(s, authn, !opts_.tls_cert.empty());
  AddCancelRoutes(s, authn, unreachable_after);

  ServerLimits();
}

void Server::ServerLimits() {
  httplib::Server& s = *http_;
  const RouteTable* routes = routes_.get();
  ConnectionWatchdog* watchdog = &watchdog_;
  // Limits, so that no client can make the server read without bound.
  s.set_payload_max_length(opts_.max_body_bytes);
  // A connection waits for its next request briefly; slow senders are the watchdog's.
  s.set_keep_alive_timeout(2);
  // Headers and body go out as separate writes: without NODELAY, Nagle and the client's delayed
  // ACK add 40 ms to a request.
  s.set_tcp_nodelay(true);
  s.set_keep_alive_max_count(100);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  const size_t max_threads = opts_.connections.max_threads;
  s.new_task_queue = [max_threads] { return new ElasticThreadPool(max_threads); };
  const size_t max_headers = opts_.max_headers;
  s.set_pre_routing_handler([max_headers](const httplib::Request& req, httplib::Response& res) {
    RequestStart() = std::chrono::steady_clock::now();
    if (req.headers.size() > max_headers) {
      Error(res, 431, fmt::format("too many header fields ({}; limit {})", req.headers.size(), max_headers));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  ServerMetrics* metrics = metrics_.get();
  s.set_logger([watchdog, metrics](const httplib::Request& req, const httplib::Response& res) {
    watchdog->ResponseSent(req.remote_addr, req.remote_port);
    // The start its headers were read at, on this same connection thread (zero if they never were).
    auto& start = RequestStart();
    double seconds = start == std::chrono::steady_clock::time_point{}
                         ? 0
                         : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    start = {};
    metrics->Request(req.method, RouteTable::TakeTemplate(), res.status, seconds);
  });
  // Errors the HTTP layer answers itself (bad request line, body or URL too long, no route)
  // get the same JSON body as every other error.
  const size_t max_body = opts_.max_body_bytes;
  s.set_error_handler([max_body, routes](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404: {
        std::string allow = routes->Allow(req.path);
        if (allow.empty()) return Error(res, 404, "no such path: " + req.path);
        res.set_header("Allow", allow);
        return Error(res, 405, fmt::format("{} is not served for {}; it takes {}", req.method, req.path, allow));
      }
      case 413: return Error(res, 413, fmt::format("request body too large (limit {} bytes)", max_body), "body");
      case 414: return Error(res, 414, "request URL too long");
      case 431: return Error(res, 431, "request headers too large");
      default: return Error(res, res.status, res.status >= 500 ? "internal error" : "bad request");
    }
  });
  // A handler that throws answers instead of taking the process down. JSON type errors come
  // from what the client sent (a field of the wrong type): a 400. Anything else is logged here
  // and answered without internals.
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const json::exception& e) {
      Error(res, 400, fmt::format("request body: a field has the wrong type or form ({})", e.what()), "body");
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path, e.what());
      Error(res, 500, "internal error");
    } catch (...) {
      spdlog::error("{} {}: unknown exception", req.method, req.path);
      Error(res, 500, "internal error");
    }
  });
}

}  // namespace hpc::cp
