#include "server/job_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "server/http_api.h"
#include "server/route_table.h"
#include "server/submission_json.h"
#include "server/submission_service.h"

namespace hpc::cp {
using http::Error;
using http::kMaxUnixSeconds;
using http::Ok;
using http::ValidName;
using httplib::Request;
using httplib::Response;
using nlohmann::json;

namespace {

constexpr const char* kJobs = R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs)";
// Every project's jobs at once: the admins' view.
constexpr const char* kAllJobs = "/api/v1/jobs";
constexpr const char* kJob = R"(/api/v1/projects/([a-z][a-z0-9-]*)/jobs/([a-z][a-z0-9-]*)/([a-z][a-z0-9-]*)/(\d+))";

// A name filter: empty, or a name as the API takes names (a filter that could match nothing is a
// mistake).
Status NameParam(const char* param, const std::string& value) {
  if (value.empty() || ValidName(value)) return Status::Ok();
  return Status::InvalidArgument("",
                                 fmt::format("{} must be a lowercase name (got \"{}\")", param, value.substr(0, 64)))
      .WithField(param);
}

// Which jobs a list covers: one project's, or (empty) every project's.
JobFilter Scope(const std::string& project) {
  JobFilter f;
  f.project = project;
  f.all_projects = project.empty();
  return f;
}

// The jobs list's filter from the query (user, state, workspace, name, sort, from, to) within
// the scope `f` already holds.
Status ParseFilter(const Request& req, JobFilter* f) {
  f->user = req.get_param_value("user");
  f->state = req.get_param_value("state");
  f->workspace = req.get_param_value("workspace");
  f->name_contains = req.get_param_value("name");
  RETURN_IF_ERROR(NameParam("user", f->user));
  RETURN_IF_ERROR(NameParam("workspace", f->workspace));
  if (!f->state.empty() && f->state.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos) {
    return Status::InvalidArgument(
               "", "state must be a Slurm job state such as COMPLETED (got \"" + f->state.substr(0, 40) + "\")")
        .WithField("state");
  }
  if (f->name_contains.size() > 200) {
    return Status::InvalidArgument("", "name must be at most 200 characters").WithField("name");
  }
  const std::string sort = req.has_param("sort") ? req.get_param_value("sort") : "submit";
  if (sort == "start") {
    f->order = JobOrder::kStart;
  } else if (sort == "end") {
    f->order = JobOrder::kEnd;
  } else if (sort != "submit") {
    return Status::InvalidArgument("", "sort must be submit, start or end (got \"" + sort.substr(0, 40) + "\")")
        .WithField("sort");
  }
  RETURN_IF_ERROR(http::IntegerQuery(req, "from", 0, kMaxUnixSeconds, &f->from));
  RETURN_IF_ERROR(http::IntegerQuery(req, "to", 0, kMaxUnixSeconds, &f->to));
  return Status::Ok();
}

// `project` empty: every project's.
void ListJobs(JobStore* store, const std::string& project, const Request& req, Response& res) {
  JobFilter f = Scope(project);
  if (Status s = ParseFilter(req, &f); !s.ok()) return Error(res, s);
  int64_t limit = 100;
  if (!http::IntegerParam(req, res, "limit", 1, 1000, &limit)) return;
  std::optional<JobCursor> cursor;
  if (req.has_param("cursor")) {
    auto c = JobCursor::Decode(req.get_param_value("cursor"));
    if (!c.ok()) return Error(res, c.status());
    if (c->order != f.order)
      return Error(res,
                   Status::InvalidArgument("", "cursor: it was returned for another sort order").WithField("cursor"));
    cursor = *c;
  }
  auto page = store->ListJobs(f, cursor, limit);
  if (!page.ok()) return Error(res, StoreUnavailable(page.status()));
  json jobs = json::array();
  for (const auto& j : page->jobs) jobs.push_back(ToJson(j));
  json out = {{"jobs", jobs}};
  out["nextCursor"] = page->next ? json(page->next->Encode()) : json(nullptr);
  Ok(res, out);
}

// Streamed in keyset pages: memory does not grow with the number of records.
void ExportJobs(JobStore* store, const std::string& project, const Request& req, Response& res) {
  auto f = std::make_shared<JobFilter>(Scope(project));
  if (Status s = ParseFilter(req, f.get()); !s.ok()) return Error(res, s);
  std::string format = req.has_param("format") ? req.get_param_value("format") : "ndjson";
  if (format != "ndjson" && format != "csv")
    return Error(res, Status::InvalidArgument("", "format must be ndjson or csv").WithField("format"));
  bool csv = format == "csv";
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
}

// The batch script of a job submitted through the API: its user's and admins' only (scripts
// can hold what other members should not read).
void JobScript(Store* store, const Principal& p, const std::string& project, const Request& req, Response& res) {
  auto j = http::ProjectJob(store, req, project, res);
  if (!j) return;
  if (j->user != p.subject && p.role != Role::kAdmin) {
    return Error(res, Status::PermissionDenied(fmt::format("job {} is {}'s; only they or an admin may read its script",
                                                           j->job_id, j->user)));
  }
  auto sub = store->SubmissionOfJob(j->data_plane, j->cluster, j->job_id, j->submit_time);
  if (!sub.ok()) return Error(res, StoreUnavailable(sub.status()));
  if (!*sub) {
    return Error(
        res, Status::NotFound(fmt::format("job {} was not submitted through the API: no script is kept", j->job_id)));
  }
  Ok(res, {{"script", (*sub)->script}, {"sbatchArgs", (*sub)->sbatch_args}, {"submission", (*sub)->id}});
}

void GetSubmission(DispatchStore* store, const std::string& project, const Request& req, Response& res) {
  auto sub = store->GetSubmission(req.matches[2]);
  if (!sub.ok()) return Error(res, StoreUnavailable(sub.status()));
  if (!*sub || (*sub)->project != project)
    return Error(res, Status::NotFound("no such submission in project " + project));
  Ok(res, SubmissionJson(**sub));
}

}  // namespace

void AddJobRoutes(RouteTable& s, http::Auth* authn, int unreachable_after) {
  Store* store = authn->store();
  auto submissions =
      std::make_shared<SubmissionService>(SubmissionService::Stores{store, store, store, store, store},
                                          SubmissionService::Options{unreachable_after, nullptr, nullptr});

  s.Get(kJobs, http::InProject(authn, [store](const Principal&, const std::string& project, const Request& req,
                                              Response& res) { ListJobs(store, project, req, res); }));
  s.Get(std::string(kJobs) + "/export",
        http::InProject(authn, [store](const Principal&, const std::string& project, const Request& req,
                                       Response& res) { ExportJobs(store, project, req, res); }));
  s.Get(kAllJobs, http::AdminOnly(authn, [store](const Principal&, const Request& req, Response& res) {
          ListJobs(store, "", req, res);
        }));
  s.Get(std::string(kAllJobs) + "/export",
        http::AdminOnly(
            authn, [store](const Principal&, const Request& req, Response& res) { ExportJobs(store, "", req, res); }));
  s.Get(kJob, http::InProject(authn,
                              [store](const Principal&, const std::string& project, const Request& req, Response& res) {
                                if (auto j = http::ProjectJob(store, req, project, res)) Ok(res, ToJson(*j));
                              }));
  s.Get(std::string(kJob) + "/script",
        http::InProject(authn, [store](const Principal& p, const std::string& project, const Request& req,
                                       Response& res) { JobScript(store, p, project, req, res); }));
  s.Post(kJobs, http::InProject(authn, [authn, submissions](const Principal& p, const std::string& project,
                                                            const Request& req, Response& res) {
           if (Status on = submissions->Enabled(); !on.ok()) return Error(res, on);
           auto body = http::Body(req, res);
           if (!body) return;
           std::string template_name;
           auto sub = submissions->Submit(p.subject, project, *body, &template_name);
           if (!sub.ok()) return Error(res, sub.status());
           authn->Audit(p.subject, req, "submission.create", project + "/" + sub->id,
                        fmt::format("workspace {} on data plane {}{}", sub->workspace, sub->data_plane,
                                    template_name.empty() ? "" : " from template " + template_name));
           Ok(res, SubmissionJson(*sub), 202);
         }));
  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/submissions/([0-9a-f]+))",
        http::InProject(authn, [store](const Principal&, const std::string& project, const Request& req,
                                       Response& res) { GetSubmission(store, project, req, res); }));
}

}  // namespace hpc::cp
