#include "server/cancel_routes.h"

#include <httplib.h>

#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "server/http_api.h"
#include "server/route_table.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

// Job states in which Slurm still holds the job: there is something to cancel.
bool Cancellable(const std::string& state) {
  static const std::set<std::string> live = {"PENDING",    "RUNNING",  "REQUEUED",     "SUSPENDED",  "CONFIGURING",
                                             "COMPLETING", "RESIZING", "REQUEUE_HOLD", "REQUEUE_FED"};
  return live.count(state.substr(0, state.find(' '))) > 0;
}

json CancellationJson(const Cancellation& c) {
  return {{"id", c.id},
          {"dataPlane", c.data_plane},
          {"cluster", c.cluster},
          {"project", c.project},
          {"jobId", c.job_id},
          {"submitTime", c.submit_time},
          {"user", c.job_user},
          {"requestedBy", c.requested_by},
          {"state", c.state},
          {"error", c.error},
          {"createdAt", c.created_at}};
}

}  // namespace

void AddCancelRoutes(RouteTable& s, http::Auth* auth, int unreachable_after) {
  using httplib::Request;
  using httplib::Response;
  Store* store = auth->store();

  s.Post(R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs/([a-z][a-z0-9-]*)/([a-z][a-z0-9-]*)/(\d+)/cancel)",
         http::InProject(auth, [=](const Principal& p, const std::string& project, const Request& req, Response& res) {
           auto found = http::ProjectJob(store, req, project, res);
           if (!found) return;
           const JobRecord& job = *found;
           if (job.user != p.subject && p.role != Role::kAdmin) {
             return http::Error(
                 res, 403, fmt::format("job {} is {}'s; only they or an admin may cancel it", job.job_id, job.user));
           }
           if (!Cancellable(job.state)) {
             return http::Error(res,
                                Status::Conflict(fmt::format("job {} is {}: nothing to cancel", job.job_id, job.state))
                                    .WithField("state"));
           }
           if (!http::RequireSlurmDataPlane(store, job.data_plane, unreachable_after, res)) return;
           auto id = jwt::RandomBytes(12);
           if (!id.ok()) return http::Error(res, StoreUnavailable(id.status()));
           Cancellation c;
           c.id = jwt::Sha256Hex(*id).substr(0, 24);
           c.data_plane = job.data_plane, c.cluster = job.cluster, c.project = project;
           c.job_id = job.job_id, c.submit_time = job.submit_time, c.job_user = job.user;
           c.requested_by = p.subject;
           c.created_at = jwt::UnixNow();
           if (Status st = store->PutCancellation(c); !st.ok()) return http::Error(res, StoreUnavailable(st));
           auth->Audit(p.subject, req, "job.cancel",
                       fmt::format("{}/{}/{}/{}", project, job.data_plane, job.cluster, job.job_id),
                       fmt::format("user {} submitted {}", job.user, job.submit_time));
           http::Ok(res, CancellationJson(c), 202);
         }));

  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/cancellations/([0-9a-f]+))",
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request& req, Response& res) {
          auto c = store->GetCancellation(req.matches[2]);
          if (!c.ok()) return http::Error(res, StoreUnavailable(c.status()));
          if (!*c || (*c)->project != project)
            return http::Error(res, Status::NotFound("no such cancellation in project " + project));
          http::Ok(res, CancellationJson(**c));
        }));

  s.Get(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/cancellations)",
        http::Authenticated(auth, [store](const Principal& p, const Request& req, Response& res) {
          if (!http::RequireAgentFor(p, req.matches[1], res)) return;
          auto pending = store->PendingCancellations(req.matches[1]);
          if (!pending.ok()) return http::Error(res, StoreUnavailable(pending.status()));
          json out = json::array();
          for (const auto& c : *pending) out.push_back(CancellationJson(c));
          http::Ok(res, {{"cancellations", out}});
        }));

  s.Post(R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/cancellations/([0-9a-f]+))", [=](const Request& req, Response& res) {
    auto body = auth->AgentBody(req, res);
    if (!body) return;
    auto c = store->GetCancellation(req.matches[2]);
    if (!c.ok()) return http::Error(res, StoreUnavailable(c.status()));
    if (!*c || (*c)->data_plane != req.matches[1]) return http::Error(res, Status::NotFound("no such cancellation"));
    Cancellation x = **c;
    if (!(*body)["state"].is_string() || ((*body)["state"] != "Done" && (*body)["state"] != "Failed")) {
      return http::Error(res, Status::InvalidArgument("", "state must be Done or Failed").WithField("state"));
    }
    if (body->contains("error") && !(*body)["error"].is_string())
      return http::Error(res, Status::InvalidArgument("", "error must be a string").WithField("error"));
    x.state = (*body)["state"];
    x.error = body->value("error", "");
    if (Status st = store->PutCancellation(x); !st.ok()) return http::Error(res, StoreUnavailable(st));
    http::Ok(res, CancellationJson(x));
  });
}

}  // namespace hpc::cp
