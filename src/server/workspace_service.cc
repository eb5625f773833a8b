#include "server/workspace_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/submission_service.h"

namespace hpc::cp {

Result<ProjectConfig> ConfiguredProject(ProjectStore* store, const std::string& name) {
  auto p = store->GetProject(name);
  if (!p.ok()) return StoreUnavailable(p.status());
  if (!*p) {
    return Status::NotFound(fmt::format(
        "project {} is not configured (an admin sets its data plane with PUT /api/v1/projects/{})", name, name));
  }
  return **p;
}

WorkspaceService::WorkspaceService(Stores stores, int unreachable_after_seconds, std::function<int64_t()> now)
    : stores_(stores), unreachable_after_(unreachable_after_seconds), now_(std::move(now)) {}

Status WorkspaceService::IdFree(const WorkspaceRecord& w) {
  auto existing = stores_.workspaces->GetWorkspace(w.id);
  if (!existing.ok()) return StoreUnavailable(existing.status());
  if (*existing && (*existing)->project != w.project) {
    return Status::Conflict(fmt::format("workspace id {} is taken; choose another name", w.id)).WithField("name");
  }
  if (*existing && !(*existing)->Settled()) {
    return Status::Conflict(
               fmt::format("workspace {} exists on data plane {} (phase {}); stop it or choose another name", w.id,
                           (*existing)->data_plane, (*existing)->phase))
        .WithField("name");
  }
  return Status::Ok();
}

Result<WorkspaceRecord> WorkspaceService::Launch(const Principal& caller, const std::string& project,
                                                 const nlohmann::json& body) {
  ASSIGN_OR_RETURN(ProjectConfig config, ConfiguredProject(stores_.projects, project));
  // A user launches for themself; an admin may launch for anyone.
  std::string user = caller.subject;
  if (body.contains("user")) {
    if (!body["user"].is_string()) return Status::InvalidArgument("", "user: must be a string").WithField("user");
    user = body["user"];
    if (user != caller.subject && caller.role != Role::kAdmin) {
      return Status::PermissionDenied(fmt::format("{} may not launch a workspace for {}", caller.subject, user))
          .WithField("user");
    }
  }
  ASSIGN_OR_RETURN(WorkspaceRecord w, BuildWorkspace(config, user, body));
  RETURN_IF_ERROR(SlurmDataPlaneReady(stores_.data_planes, w.data_plane, unreachable_after_, now_()));
  RETURN_IF_ERROR(IdFree(w));
  auto uid = stores_.projects->AssignUid(w.user);
  if (!uid.ok()) return StoreUnavailable(uid.status());
  w.uid = *uid;
  w.created_at = w.updated_at = now_();
  w.message = "waiting for data plane " + w.data_plane + " to apply it";
  if (Status st = stores_.workspaces->PutWorkspace(w); !st.ok()) return StoreUnavailable(st);
  spdlog::info("workspace {}: {} in project {} on data plane {}", w.id, w.user, w.project, w.data_plane);
  return w;
}

}  // namespace hpc::cp
