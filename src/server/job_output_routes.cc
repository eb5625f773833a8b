#include "server/job_output_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/http_api.h"
#include "server/relay_hub.h"
#include "server/route_table.h"

namespace hpc::cp {
using http::Error;
using http::Ok;
using httplib::Request;
using httplib::Response;
using nlohmann::json;

namespace {

constexpr const char* kOutput =
    R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs/([a-z][a-z0-9-]*)/([a-z][a-z0-9-]*)/(\d+)/output)";
// How long a reader waits for the agent: a read is one command on the data plane.
constexpr std::chrono::seconds kAgentTimeout{15};

// ?stream=stdout|stderr&offset=N&limit=N; no offset: the file's last `limit` bytes.
Status ParseOutputQuery(const Request& req, JobOutputRequest* r) {
  r->stream = req.has_param("stream") ? req.get_param_value("stream") : "stdout";
  if (r->stream != "stdout" && r->stream != "stderr") {
    return Status::InvalidArgument("",
                                   fmt::format("stream must be stdout or stderr (got \"{}\")", r->stream.substr(0, 40)))
        .WithField("stream");
  }
  r->offset = -1;
  RETURN_IF_ERROR(http::IntegerQuery(req, "offset", 0, INT64_MAX / 2, &r->offset));
  return http::IntegerQuery(req, "limit", 1, kMaxJobOutputChunk, &r->limit);
}

void ReadOutput(Store* store, RelayHub* relay, int unreachable_after, const Principal& p, const std::string& project,
                const Request& req, Response& res) {
  auto j = http::ProjectJob(store, req, project, res);
  if (!j) return;
  if (j->user != p.subject && p.role != Role::kAdmin) {
    return Error(res, Status::PermissionDenied(fmt::format("job {} is {}'s; only they or an admin may read its output",
                                                           j->job_id, j->user)));
  }
  JobOutputRequest r;
  if (Status s = ParseOutputQuery(req, &r); !s.ok()) return Error(res, s);
  r.job_id = j->job_id;
  r.submit_time = j->submit_time;
  r.user = j->user;
  r.cluster = j->cluster;
  if (!http::RequireSlurmDataPlane(store, j->data_plane, unreachable_after, res)) return;
  auto answer = relay->Call(j->data_plane, ToJson(r), kAgentTimeout);
  if (!answer.ok()) return Error(res, answer.status());
  auto out = JobOutputAnswer(*answer);
  if (!out.ok()) return Error(res, out.status());
  Ok(res, *out);
}

}  // namespace

void AddJobOutputRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, int unreachable_after) {
  Store* store = authn->store();
  s.Get(kOutput,
        http::InProject(authn, [store, relay, unreachable_after](const Principal& p, const std::string& project,
                                                                 const Request& req, Response& res) {
          ReadOutput(store, relay, unreachable_after, p, project, req, res);
        }));
}

}  // namespace hpc::cp
