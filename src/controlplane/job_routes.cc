#include "controlplane/job_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "controlplane/http_api.h"
#include "controlplane/job_template.h"
#include "controlplane/route_table.h"
#include "controlplane/server.h"
#include "controlplane/server_metrics.h"
#include "controlplane/submission_json.h"

namespace hpc::cp {
using http::Body;
using http::Error;
using http::kMaxUnixSeconds;
using http::Ok;
using http::ValidName;
using nlohmann::json;

void AddJobRoutes(RouteTable& s, http::Auth* authn, int unreachable_after) {
  using httplib::Request;
  using httplib::Response;
  Store* store = authn->store();
  auto auth = [authn](const Request& req, Response& res) { return authn->Authenticate(req, res); };
  auto parse_filter = [](const httplib::Request& req, const std::string& project, JobFilter* f,
                         httplib::Response& res) {
    f->project = project;
    f->user = req.get_param_value("user");
    f->state = req.get_param_value("state");
    f->workspace = req.get_param_value("workspace");
    f->name_contains = req.get_param_value("name");
    // Names are checked like everywhere else: a filter that could match nothing is a mistake.
    auto valid_name = [&res](const char* param, const std::string& value) {
      if (value.empty() || ValidName(value)) return true;
      http::Error(res, 400, fmt::format("{} must be a lowercase name (got \"{}\")", param, value.substr(0, 64)), param);
      return false;
    };
    if (!valid_name("user", f->user) || !valid_name("workspace", f->workspace)) return false;
    if (!f->state.empty() && f->state.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_") != std::string::npos) {
      http::Error(res, 400,
                  "state must be a Slurm job state such as COMPLETED (got \"" + f->state.substr(0, 40) + "\")",
                  "state");
      return false;
    }
    if (f->name_contains.size() > 200) {
      http::Error(res, 400, "name must be at most 200 characters", "name");
      return false;
    }
    const std::string sort = req.has_param("sort") ? req.get_param_value("sort") : "submit";
    if (sort == "start") {
      f->order = JobOrder::kStart;
    } else if (sort == "end") {
      f->order = JobOrder::kEnd;
    } else if (sort != "submit") {
      http::Error(res, 400, "sort must be submit, start or end (got \"" + sort.substr(0, 40) + "\")", "sort");
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
      if (!c.ok()) return http::Error(res, c.status());
      if (c->order != f.order) return Error(res, 400, "cursor: it was returned for another sort order", "cursor");
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
            return Error(res, 403,
                         fmt::format("job {} is {}'s; only they or an admin may read its script", j->job_id, j->user));
          }
          auto sub = store->SubmissionOfJob(j->data_plane, j->cluster, j->job_id, j->submit_time);
          if (!sub.ok()) return Error(res, 503, sub.status().message());
          if (!*sub)
            return Error(res, 404,
                         fmt::format("job {} was not submitted through the API: no script is kept", j->job_id));
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
      return Error(res, 403,
                   fmt::format("submitting HPC jobs through the API is disabled: flag {} is off", kFlagHpcJobs));
    }
    auto body = Body(req, res);
    if (!body) return;
    for (const char* field : {"dataPlane", "template", "script"}) {
      if (body->contains(field) && !(*body)[field].is_string()) {
        return Error(res, 400, std::string(field) + " must be a string", field);
      }
    }
    if (!body->contains("workspace") || !(*body)["workspace"].is_string() ||
        (*body)["workspace"].get<std::string>().empty()) {
      return Error(res, 400, "workspace is required (a non-empty string)", "workspace");
    }
    // A template gives the script and options the body leaves out; the body's options win.
    json options = body->value("options", json::object());
    std::string script = body->value("script", "");
    const std::string template_name = body->value("template", "");
    if (!template_name.empty()) {
      if (!ValidName(template_name)) return Error(res, 400, "template must be a template name", "template");
      auto t = store->GetTemplate(project, template_name);
      if (!t.ok()) return Error(res, 503, t.status().message());
      if (!*t) return Error(res, 400, fmt::format("no template {} in project {}", template_name, project), "template");
      if (script.empty()) script = (*t)->script;
      if (!options.is_object()) return Error(res, 400, "options must be an object", "options");
      json merged = (*t)->options;
      merged.update(options);
      options = merged;
    }
    if (script.empty())
      return Error(res, 400, "script is required (a non-empty string) unless a template gives it", "script");
    Submission sub;
    sub.data_plane = body->value("dataPlane", "");
    sub.workspace = (*body)["workspace"];
    sub.script = script;
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
    if (Status st = ValidateScript(sub.script); !st.ok()) return Error(res, st);
    auto args = SbatchArgs(options);
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
                 fmt::format("workspace {} on data plane {}{}", sub.workspace, sub.data_plane,
                             template_name.empty() ? "" : " from template " + template_name));
    Ok(res, SubmissionJson(sub), 202);
  });

  s.Get(R"(/api/v1/projects/([a-z][a-z0-9-]*)/submissions/([0-9a-f]+))",
        [=](const httplib::Request& req, httplib::Response& res) {
          auto p = auth(req, res);
          if (!p) return;
          std::string project = req.matches[1];
          if (!http::RequireProject(*p, project, res)) return;
          auto sub = store->GetSubmission(req.matches[2]);
          if (!sub.ok()) return Error(res, 503, sub.status().message());
          if (!*sub || (*sub)->project != project) return Error(res, 404, "no such submission in project " + project);
          Ok(res, SubmissionJson(**sub));
        });
}

}  // namespace hpc::cp
