#include "controlplane/workspace_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "controlplane/http_api.h"
#include "controlplane/route_table.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

constexpr const char* kProject = R"(/api/v1/projects/([a-z][a-z0-9-]*))";
constexpr const char* kDataPlaneWorkspaces = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/workspaces)";

// The project's configuration, or a 404 saying how an admin sets it (503: store away).
std::optional<ProjectConfig> LoadProject(Store* store, const std::string& name, httplib::Response& res) {
  auto p = store->GetProject(name);
  if (!p.ok()) {
    http::Error(res, 503, p.status().message());
    return std::nullopt;
  }
  if (!*p) {
    http::Error(res, 404,
                fmt::format("project {} is not configured (an admin sets its data plane with PUT "
                            "/api/v1/projects/{})",
                            name, name));
    return std::nullopt;
  }
  return **p;
}

// The workspace `id` of `project`, or a 404.
std::optional<WorkspaceRecord> LoadWorkspace(Store* store, const std::string& project, const std::string& id,
                                             httplib::Response& res) {
  auto w = store->GetWorkspace(id);
  if (!w.ok()) {
    http::Error(res, 503, w.status().message());
    return std::nullopt;
  }
  if (!*w || (*w)->project != project) {
    http::Error(res, 404, fmt::format("no workspace {} in project {}", id, project));
    return std::nullopt;
  }
  return **w;
}

}  // namespace

void AddWorkspaceRoutes(RouteTable& s, http::Auth* auth, int unreachable_after) {
  Store* store = auth->store();
  using httplib::Request;
  using httplib::Response;

  s.Put(kProject, [=](const Request& req, Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p || !http::RequireAdmin(*p, res)) return;
    auto body = http::Body(req, res);
    if (!body) return;
    auto config = ProjectConfigFromJson(req.matches[1], *body);
    if (!config.ok()) return http::Error(res, config.status());
    config->updated_at = jwt::UnixNow();
    if (Status st = store->PutProject(*config); !st.ok()) return http::Error(res, 503, st.message());
    spdlog::info("project {}: workspaces on data plane {}", config->name, config->data_plane);
    auth->Audit(p->subject, req, "project.put", config->name, ToJson(*config).dump());
    http::Ok(res, ToJson(*config));
  });

  s.Get(kProject, [=](const Request& req, Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p || !http::RequireProject(*p, req.matches[1], res)) return;
    if (auto config = LoadProject(store, req.matches[1], res)) http::Ok(res, ToJson(*config));
  });

  s.Post(std::string(kProject) + "/workspaces", [=](const Request& req, Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p || !http::RequireProject(*p, req.matches[1], res)) return;
    auto body = http::Body(req, res);
    if (!body) return;
    auto project = LoadProject(store, req.matches[1], res);
    if (!project) return;
    // A user launches for themself; an admin may launch for anyone.
    std::string user = p->subject;
    if (body->contains("user")) {
      if (!(*body)["user"].is_string()) return http::Error(res, 400, "user: must be a string", "user");
      user = (*body)["user"];
      if (user != p->subject && p->role != Role::kAdmin) {
        return http::Error(res, 403, fmt::format("{} may not launch a workspace for {}", p->subject, user), "user");
      }
    }
    auto w = BuildWorkspace(*project, user, *body);
    if (!w.ok()) return http::Error(res, w.status());
    if (!http::RequireSlurmDataPlane(store, w->data_plane, unreachable_after, res)) return;
    auto existing = store->GetWorkspace(w->id);
    if (!existing.ok()) return http::Error(res, 503, existing.status().message());
    // Ids are one namespace on a data plane: another project's workspace, running or not, is
    // neither shown nor taken over.
    if (*existing && (*existing)->project != w->project) {
      return http::Error(res, 409, fmt::format("workspace id {} is taken; choose another name", w->id), "name");
    }
    if (*existing && !(*existing)->Settled()) {
      return http::Error(res, 409,
                         fmt::format("workspace {} exists on data plane {} (phase {}); stop it or choose another name",
                                     w->id, (*existing)->data_plane, (*existing)->phase),
                         "name");
    }
    auto uid = store->AssignUid(w->user);
    if (!uid.ok()) return http::Error(res, 503, uid.status().message());
    w->uid = *uid;
    w->created_at = w->updated_at = jwt::UnixNow();
    w->message = "waiting for data plane " + w->data_plane + " to apply it";
    if (Status st = store->PutWorkspace(*w); !st.ok()) return http::Error(res, 503, st.message());
    spdlog::info("workspace {}: {} in project {} on data plane {}", w->id, w->user, w->project, w->data_plane);
    auth->Audit(p->subject, req, "workspace.launch", w->project + "/" + w->id,
                fmt::format("user {} tier {} on data plane {}", w->user, w->tier, w->data_plane));
    http::Ok(res, ToJson(*w), 202);
  });

  s.Get(std::string(kProject) + "/workspaces", [=](const Request& req, Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p || !http::RequireProject(*p, req.matches[1], res)) return;
    auto ws = store->ProjectWorkspaces(req.matches[1]);
    if (!ws.ok()) return http::Error(res, 503, ws.status().message());
    json out = json::array();
    for (const auto& w : *ws) out.push_back(ToJson(w));
    http::Ok(res, {{"workspaces", out}});
  });

  s.Get(std::string(kProject) + "/workspaces/([a-z][a-z0-9-]*)", [=](const Request& req, Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p || !http::RequireProject(*p, req.matches[1], res)) return;
    if (auto w = LoadWorkspace(store, req.matches[1], req.matches[2], res)) http::Ok(res, ToJson(*w));
  });

  s.Delete(std::string(kProject) + "/workspaces/([a-z][a-z0-9-]*)", [=](const Request& req, Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p || !http::RequireProject(*p, req.matches[1], res)) return;
    auto w = LoadWorkspace(store, req.matches[1], req.matches[2], res);
    if (!w) return;
    if (w->user != p->subject && p->role != Role::kAdmin) {
      return http::Error(res, 403,
                         fmt::format("workspace {} is {}'s; only they or an admin may stop it", w->id, w->user));
    }
    std::string cancel = req.get_param_value("cancelJobs");
    if (!cancel.empty() && cancel != "true" && cancel != "false") {
      return http::Error(res, 400, "cancelJobs must be true or false", "cancelJobs");
    }
    w->desired = "Stopped";
    w->cancel_jobs = w->cancel_jobs || cancel == "true";
    if (Status st = store->SetWorkspaceDesired(w->id, w->desired, w->cancel_jobs); !st.ok()) {
      return http::Error(res, 503, st.message());
    }
    auth->Audit(p->subject, req, "workspace.stop", w->project + "/" + w->id, w->cancel_jobs ? "cancelJobs" : "");
    http::Ok(res, ToJson(*w), 202);
  });

  s.Get(kDataPlaneWorkspaces, [=](const Request& req, Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p || !http::RequireAgentFor(*p, req.matches[1], res)) return;
    auto ws = store->DataPlaneWorkspaces(req.matches[1]);
    if (!ws.ok()) return http::Error(res, 503, ws.status().message());
    json out = json::array();
    for (const auto& w : *ws) out.push_back(ToJson(w));
    http::Ok(res, {{"workspaces", out}});
  });

  s.Post(std::string(kDataPlaneWorkspaces) + "/([a-z][a-z0-9-]*)/status", [=](const Request& req, Response& res) {
    auto body = auth->AgentBody(req, res);
    if (!body) return;
    std::string phase = body->value("phase", "");
    if (!ValidPhase(phase)) {
      return http::Error(res, 400, "phase must be Pending, Ready, Stopping, Stopped or Failed (got \"" + phase + "\")",
                         "phase");
    }
    if (body->contains("message") && !(*body)["message"].is_string()) {
      return http::Error(res, 400, "message must be a string", "message");
    }
    auto w = store->GetWorkspace(req.matches[2]);
    if (!w.ok()) return http::Error(res, 503, w.status().message());
    if (!*w || (*w)->data_plane != req.matches[1]) return http::Error(res, 404, "no such workspace on this data plane");
    if (Status st = store->SetWorkspacePhase((*w)->id, phase, body->value("message", "")); !st.ok()) {
      return http::Error(res, 503, st.message());
    }
    http::Ok(res, {{"accepted", true}});
  });
}

}  // namespace hpc::cp
