#include "server/template_routes.h"

#include <httplib.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "server/http_api.h"
#include "server/job_template.h"
#include "server/route_table.h"
#include "server/template_service.h"

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
    http::Error(
        res, Status::InvalidArgument(
                 "", fmt::format("template name must be a lowercase letter, then up to 62 lowercase letters, digits or "
                                 "'-' (got \"{}\")",
                                 name.substr(0, 64)))
                 .WithField("name"));
    return std::nullopt;
  }
  return name;
}
}  // namespace

void AddTemplateRoutes(RouteTable& s, http::Auth* auth) {
  Store* store = auth->store();
  auto templates = std::make_shared<TemplateService>(store, jwt::UnixNow);
  using httplib::Request;
  using httplib::Response;

  s.Get(kTemplates,
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request&, Response& res) {
          auto all = store->ProjectTemplates(project);
          if (!all.ok()) return http::Error(res, StoreUnavailable(all.status()));
          json out = json::array();
          for (const auto& t : *all) out.push_back(ToJson(t));
          http::Ok(res, {{"templates", out}});
        }));

  s.Get(kTemplate,
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request& req, Response& res) {
          auto name = TemplateName(req, res);
          if (!name) return;
          auto t = store->GetTemplate(project, *name);
          if (!t.ok()) return http::Error(res, StoreUnavailable(t.status()));
          if (!*t)
            return http::Error(res, Status::NotFound(fmt::format("no template {} in project {}", *name, project)));
          http::Ok(res, ToJson(**t));
        }));

  s.Put(kTemplate, http::AdminOnly(auth, [auth, templates](const Principal& p, const Request& req, Response& res) {
          const std::string project = req.matches[1];
          auto name = TemplateName(req, res);
          if (!name) return;
          auto body = http::Body(req, res);
          if (!body) return;
          auto saved = templates->Put(p.subject, project, *name, *body);
          if (!saved.ok()) return http::Error(res, saved.status());
          auth->Audit(p.subject, req, saved->replaced ? "template.update" : "template.create", project + "/" + *name);
          http::Ok(res, ToJson(saved->job_template), saved->replaced ? 200 : 201);
        }));

  s.Delete(kTemplate, http::AdminOnly(auth, [auth, templates](const Principal& p, const Request& req, Response& res) {
             const std::string project = req.matches[1];
             auto name = TemplateName(req, res);
             if (!name) return;
             if (Status deleted = templates->Delete(project, *name); !deleted.ok()) return http::Error(res, deleted);
             auth->Audit(p.subject, req, "template.delete", project + "/" + *name);
             http::Ok(res, {{"deleted", *name}});
           }));
}

}  // namespace hpc::cp
