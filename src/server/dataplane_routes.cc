#include "server/dataplane_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "server/http_api.h"
#include "server/route_table.h"
#include "server/server_metrics.h"
#include "server/submission_json.h"

namespace hpc::cp {
using http::Error;
using http::kMaxUnixSeconds;
using http::Ok;
using nlohmann::json;

namespace {

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
using httplib::Request;
using httplib::Response;

// Every data plane, Unreachable when it has not reported within `unreachable_after` seconds.
void ListDataPlanes(DataPlaneStore* store, int unreachable_after, Response& res) {
  auto dps = store->DataPlanes();
  if (!dps.ok()) return Error(res, StoreUnavailable(dps.status()));
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
}

// An agent's report of its data plane: state, reasons, component versions.
void Report(http::Auth* authn, const Request& req, Response& res) {
  auto body = authn->AgentBody(req, res);
  if (!body) return;
  DataPlane dp;
  dp.name = req.matches[1];
  dp.state = body->value("state", "");
  if (dp.state != "Healthy" && dp.state != "Degraded") {
    return Error(
        res,
        Status::InvalidArgument("", "state must be Healthy or Degraded (got \"" + dp.state + "\")").WithField("state"));
  }
  try {
    dp.reasons = body->value("reasons", std::vector<std::string>{});
    dp.component_versions = body->value("componentVersions", std::map<std::string, std::string>{});
  } catch (const json::exception& e) {
    return Error(res, Status::InvalidArgument(
                          "", std::string("reasons must be strings and componentVersions a string map: ") + e.what())
                          .WithField("componentVersions"));
  }
  dp.last_report = jwt::UnixNow();
  if (Status st = authn->store()->UpsertDataPlane(dp); !st.ok()) return Error(res, StoreUnavailable(st));
  Ok(res, {{"accepted", true}});
}

// An agent's batch of job records; each belongs to its own data plane whatever the record says.
void IngestJobs(http::Auth* authn, ServerMetrics* metrics, const Request& req, Response& res) {
  auto body = authn->AgentBody(req, res);
  if (!body) return;
  std::string name = req.matches[1];
  if (!body->contains("jobs") || !(*body)["jobs"].is_array())
    return Error(res, Status::InvalidArgument("", "jobs must be an array").WithField("jobs"));
  std::vector<JobRecord> jobs;
  for (size_t i = 0; i < (*body)["jobs"].size(); ++i) {
    auto r = JobRecordFromJson((*body)["jobs"][i]);
    if (!r.ok()) return http::Error(res, r.status().InField(fmt::format("jobs[{}]", i)));
    r->data_plane = name;  // an agent speaks for its own data plane only
    jobs.push_back(std::move(*r));
  }
  if (Status st = authn->store()->UpsertJobs(jobs); !st.ok()) return Error(res, StoreUnavailable(st));
  metrics->Ingested(jobs.size());
  Ok(res, {{"upserted", jobs.size()}});
}

void PendingSubmissions(DispatchStore* store, const std::string& data_plane, Response& res) {
  auto subs = store->PendingSubmissions(data_plane);
  if (!subs.ok()) return Error(res, StoreUnavailable(subs.status()));
  json out = json::array();
  for (const auto& x : *subs) {
    json j = SubmissionJson(x);
    j["script"] = x.script;
    j["sbatchArgs"] = x.sbatch_args;
    out.push_back(j);
  }
  Ok(res, {{"submissions", out}});
}

// An agent's outcome of a submission: Submitted (with its job) or Failed.
void SettleSubmission(http::Auth* authn, const Request& req, Response& res) {
  auto body = authn->AgentBody(req, res);
  if (!body) return;
  Store* store = authn->store();
  auto sub = store->GetSubmission(req.matches[2]);
  if (!sub.ok()) return Error(res, StoreUnavailable(sub.status()));
  if (!*sub || (*sub)->data_plane != req.matches[1]) return Error(res, Status::NotFound("no such submission"));
  Submission x = **sub;
  x.state = body->value("state", "");
  if (x.state != "Submitted" && x.state != "Failed")
    return Error(res, Status::InvalidArgument("", "state must be Submitted or Failed").WithField("state"));
  x.error = body->value("error", "");
  if (x.state == "Submitted") {
    if (!(*body)["jobId"].is_number_integer() || !(*body)["submitTime"].is_number_integer() ||
        !(*body)["cluster"].is_string()) {
      return Error(res, Status::InvalidArgument("", "jobId, submitTime and cluster are required for a submitted job")
                            .WithField("jobId"));
    }
    x.job_id = (*body)["jobId"];
    x.submit_time = (*body)["submitTime"];
    x.cluster = (*body)["cluster"];
    // The job enters the history now, marked as submitted through the API; the agent's records
    // fill in its statistics later and keep the mark.
    JobRecord r;
    r.data_plane = x.data_plane, r.cluster = x.cluster, r.job_id = x.job_id, r.submit_time = x.submit_time;
    r.user = x.user, r.project = x.project, r.partition = x.workspace, r.state = "PENDING", r.source = "api";
    if (Status st = store->UpsertJobs({r}); !st.ok()) return Error(res, StoreUnavailable(st));
  }
  if (Status st = store->PutSubmission(x); !st.ok()) return Error(res, StoreUnavailable(st));
  Ok(res, SubmissionJson(x));
}

}  // namespace

void AddDataPlaneRoutes(RouteTable& s, http::Auth* authn, ServerMetrics* metrics, int unreachable_after) {
  Store* store = authn->store();
  s.Get("/api/v1/dataplanes",
        http::Authenticated(authn, [store, unreachable_after](const Principal&, const Request&, Response& res) {
          ListDataPlanes(store, unreachable_after, res);
        }));
  s.Post(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/report)",
         [authn](const Request& req, Response& res) { Report(authn, req, res); });
  s.Post(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/jobs)",
         [authn, metrics](const Request& req, Response& res) { IngestJobs(authn, metrics, req, res); });
  s.Get(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/submissions)",
        http::Authenticated(authn, [store](const Principal& p, const Request& req, Response& res) {
          if (http::RequireAgentFor(p, req.matches[1], res)) PendingSubmissions(store, req.matches[1], res);
        }));
  s.Post(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/submissions/([0-9a-f]+))",
         [authn](const Request& req, Response& res) { SettleSubmission(authn, req, res); });
}

}  // namespace hpc::cp
