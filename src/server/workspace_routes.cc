#include "server/workspace_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "server/http_api.h"
#include "server/route_table.h"
#include "server/submission_service.h"
#include "server/workspace_service.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

constexpr const char* kProject = R"(/api/v1/projects/([a-z][a-z0-9-]*))";
constexpr const char* kDataPlaneWorkspaces = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/workspaces)";

using httplib::Request;
using httplib::Response;

// The workspace `id` of `project`: NotFound when it has none of that id.
Result<WorkspaceRecord> ProjectWorkspace(WorkspaceStore* store, const std::string& project, const std::string& id) {
  auto w = store->GetWorkspace(id);
  if (!w.ok()) return StoreUnavailable(w.status());
  if (!*w || (*w)->project != project)
    return Status::NotFound(fmt::format("no workspace {} in project {}", id, project));
  return **w;
}

void PutProject(http::Auth* auth, const Principal& p, const Request& req, Response& res) {
  auto body = http::Body(req, res);
  if (!body) return;
  auto config = ProjectConfigFromJson(req.matches[1], *body);
  if (!config.ok()) return http::Error(res, config.status());
  config->updated_at = jwt::UnixNow();
  if (Status st = auth->store()->PutProject(*config); !st.ok()) return http::Error(res, StoreUnavailable(st));
  spdlog::info("project {}: workspaces on data plane {}", config->name, config->data_plane);
  auth->Audit(p.subject, req, "project.put", config->name, ToJson(*config).dump());
  http::Ok(res, ToJson(*config));
}

void LaunchWorkspace(http::Auth* auth, WorkspaceService* service, const Principal& p, const std::string& project,
                     const Request& req, Response& res) {
  auto body = http::Body(req, res);
  if (!body) return;
  auto w = service->Launch(p, project, *body);
  if (!w.ok()) return http::Error(res, w.status());
  auth->Audit(p.subject, req, "workspace.launch", w->project + "/" + w->id,
              fmt::format("user {} tier {} on data plane {}", w->user, w->tier, w->data_plane));
  http::Ok(res, ToJson(*w), 202);
}

void WorkspaceList(const Result<std::vector<WorkspaceRecord>>& ws, Response& res) {
  if (!ws.ok()) return http::Error(res, StoreUnavailable(ws.status()));
  json out = json::array();
  for (const auto& w : *ws) out.push_back(ToJson(w));
  http::Ok(res, {{"workspaces", out}});
}

void StopWorkspace(http::Auth* auth, const Principal& p, const std::string& project, const Request& req,
                   Response& res) {
  auto w = ProjectWorkspace(auth->store(), project, req.matches[2]);
  if (!w.ok()) return http::Error(res, w.status());
  if (w->user != p.subject && p.role != Role::kAdmin) {
    return http::Error(res, Status::PermissionDenied(fmt::format(
                                "workspace {} is {}'s; only they or an admin may stop it", w->id, w->user)));
  }
  std::string cancel = req.get_param_value("cancelJobs");
  if (!cancel.empty() && cancel != "true" && cancel != "false") {
    return http::Error(res, Status::InvalidArgument("", "cancelJobs must be true or false").WithField("cancelJobs"));
  }
  w->desired = "Stopped";
  w->cancel_jobs = w->cancel_jobs || cancel == "true";
  if (Status st = auth->store()->SetWorkspaceDesired(w->id, w->desired, w->cancel_jobs); !st.ok()) {
    return http::Error(res, StoreUnavailable(st));
  }
  auth->Audit(p.subject, req, "workspace.stop", w->project + "/" + w->id, w->cancel_jobs ? "cancelJobs" : "");
  http::Ok(res, ToJson(*w), 202);
}

// An agent's report of a workspace's phase on its data plane.
void ReportWorkspacePhase(http::Auth* auth, const Request& req, Response& res) {
  auto body = auth->AgentBody(req, res);
  if (!body) return;
  std::string phase = body->value("phase", "");
  if (!ValidPhase(phase)) {
    return http::Error(res, Status::InvalidArgument(
                                "", "phase must be Pending, Ready, Stopping, Stopped or Failed (got \"" + phase + "\")")
                                .WithField("phase"));
  }
  if (body->contains("message") && !(*body)["message"].is_string()) {
    return http::Error(res, Status::InvalidArgument("", "message must be a string").WithField("message"));
  }
  WorkspaceStore* store = auth->store();
  auto w = store->GetWorkspace(req.matches[2]);
  if (!w.ok()) return http::Error(res, StoreUnavailable(w.status()));
  if (!*w || (*w)->data_plane != req.matches[1])
    return http::Error(res, Status::NotFound("no such workspace on this data plane"));
  if (Status st = store->SetWorkspacePhase((*w)->id, phase, body->value("message", "")); !st.ok()) {
    return http::Error(res, StoreUnavailable(st));
  }
  http::Ok(res, {{"accepted", true}});
}

}  // namespace

void AddWorkspaceRoutes(RouteTable& s, http::Auth* auth, int unreachable_after) {
  Store* store = auth->store();
  auto service = std::make_shared<WorkspaceService>(WorkspaceService::Stores{store, store, store}, unreachable_after,
                                                    jwt::UnixNow);
  const std::string workspaces = std::string(kProject) + "/workspaces";
  const std::string workspace = workspaces + "/([a-z][a-z0-9-]*)";

  s.Put(kProject, http::AdminOnly(auth, [auth](const Principal& p, const Request& req, Response& res) {
          PutProject(auth, p, req, res);
        }));
  s.Get(kProject,
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request&, Response& res) {
          auto config = ConfiguredProject(store, project);
          config.ok() ? http::Ok(res, ToJson(*config)) : http::Error(res, config.status());
        }));
  s.Post(workspaces, http::InProject(auth, [auth, service](const Principal& p, const std::string& project,
                                                           const Request& req, Response& res) {
           LaunchWorkspace(auth, service.get(), p, project, req, res);
         }));
  s.Get(workspaces,
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request&, Response& res) {
          WorkspaceList(store->ProjectWorkspaces(project), res);
        }));
  s.Get(workspace,
        http::InProject(auth, [store](const Principal&, const std::string& project, const Request& req, Response& res) {
          auto w = ProjectWorkspace(store, project, req.matches[2]);
          w.ok() ? http::Ok(res, ToJson(*w)) : http::Error(res, w.status());
        }));
  s.Delete(workspace, http::InProject(auth, [auth](const Principal& p, const std::string& project, const Request& req,
                                                   Response& res) { StopWorkspace(auth, p, project, req, res); }));
  s.Get(kDataPlaneWorkspaces, http::Authenticated(auth, [store](const Principal& p, const Request& req, Response& res) {
          if (http::RequireAgentFor(p, req.matches[1], res))
            WorkspaceList(store->DataPlaneWorkspaces(req.matches[1]), res);
        }));
  s.Post(std::string(kDataPlaneWorkspaces) + "/([a-z][a-z0-9-]*)/status",
         [auth](const Request& req, Response& res) { ReportWorkspacePhase(auth, req, res); });
}

}  // namespace hpc::cp
