#include "controlplane/template_routes.h"

#include <httplib.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "controlplane/http_api.h"
#include "controlplane/job_template.h"
#include "controlplane/route_table.h"

namespace hpc::cp {
using nlohmann::json;

namespace {
constexpr const char* kTemplates = R"(/api/v1/projects/([a-z][a-z0-9-]*)/templates)";
constexpr const char* kTemplate = R"(/api/v1/projects/([a-z][a-z0-9-]*)/templates/([^/]+))";

// The template name of the path, or a 400 naming it (the path takes any segment so that a bad
// name is told apart from a route that does not exist).
std::optional<std::string> TemplateName(const httplib::Request& req, httplib::Response& res) {
  const std::string name = req.matches[2];
  if (!http::ValidName(name)) {
    http::Error(res, 400,
                fmt::format("template name must be a lowercase letter, then up to 62 lowercase letters, digits or "
                            "'-' (got \"{}\")",
                            name.substr(0, 64)),
                "name");
    return std::nullopt;
  }
  return name;
}
}  // namespace

void AddTemplateRoutes(RouteTable& s, http::Auth* auth) {
  Store* store = auth->store();
  using httplib::Request;
  using httplib::Response;

  s.Get(kTemplates,
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request&, Response& res) {
          auto all = store->ProjectTemplates(project);
          if (!all.ok()) return http::Error(res, 503, all.status().message());
          json out = json::array();
          for (const auto& t : *all) out.push_back(ToJson(t));
          http::Ok(res, {{"templates", out}});
        }));

  s.Get(kTemplate,
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request& req, Response& res) {
          auto name = TemplateName(req, res);
          if (!name) return;
          auto t = store->GetTemplate(project, *name);
          if (!t.ok()) return http::Error(res, 503, t.status().message());
          if (!*t) return http::Error(res, 404, fmt::format("no template {} in project {}", *name, project));
          http::Ok(res, ToJson(**t));
        }));

  s.Put(kTemplate, http::AdminOnly(auth, [auth, store](const Principal& p, const Request& req, Response& res) {
          const std::string project = req.matches[1];
          auto name = TemplateName(req, res);
          if (!name) return;
          auto body = http::Body(req, res);
          if (!body) return;
          auto t = JobTemplateFromJson(project, *name, *body);
          if (!t.ok()) return http::Error(res, t.status());
          // Templates belong to a configured project: a typo in the path is not a new project.
          auto config = store->GetProject(project);
          if (!config.ok()) return http::Error(res, 503, config.status().message());
          if (!*config) {
            return http::Error(
                res, 404,
                fmt::format("project {} is not configured (PUT /api/v1/projects/{} first)", project, project));
          }
          auto existing = store->ProjectTemplates(project);
          if (!existing.ok()) return http::Error(res, 503, existing.status().message());
          bool replaces =
              std::any_of(existing->begin(), existing->end(), [&](const JobTemplate& e) { return e.name == *name; });
          if (!replaces && existing->size() >= kMaxTemplatesPerProject) {
            return http::Error(res, 409,
                               fmt::format("project {} has {} templates already, the most it may hold", project,
                                           kMaxTemplatesPerProject));
          }
          t->updated_at = jwt::UnixNow();
          t->updated_by = p.subject;
          if (Status st = store->PutTemplate(*t); !st.ok()) return http::Error(res, 503, st.message());
          auth->Audit(p.subject, req, replaces ? "template.update" : "template.create", project + "/" + *name);
          http::Ok(res, ToJson(*t), replaces ? 200 : 201);
        }));

  s.Delete(kTemplate, http::AdminOnly(auth, [auth, store](const Principal& p, const Request& req, Response& res) {
             const std::string project = req.matches[1];
             auto name = TemplateName(req, res);
             if (!name) return;
             auto found = store->DeleteTemplate(project, *name);
             if (!found.ok()) return http::Error(res, 503, found.status().message());
             if (!*found) return http::Error(res, 404, fmt::format("no template {} in project {}", *name, project));
             auth->Audit(p.subject, req, "template.delete", project + "/" + *name);
             http::Ok(res, {{"deleted", *name}});
           }));
}

}  // namespace hpc::cp
