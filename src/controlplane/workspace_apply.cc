// The agent's half of workspace dispatch: pull the workspaces the control plane wants on this
// data plane, create or stop them here through the same path as `hpcplane workspace launch`
// and `stop`, and report each one's phase. Only workspaces the control plane lists are
// touched; ones launched on the data plane itself are left alone.
#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "controlplane/agent.h"
#include "controlplane/workspace_record.h"
#include "operator/store.h"
#include "operator/workspace_request.h"
#include "platform/catalog.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

struct Phase {
  std::string phase, message;
};

// The user as the control plane knows them, in this data plane's catalog with the same uid.
Status EnsureUser(const platform::Catalog& catalog, const WorkspaceRecord& w) {
  ASSIGN_OR_RETURN(auto users, catalog.Users());
  for (const auto& u : users) {
    if (u.name != w.user) continue;
    if (u.uid != w.uid) {
      return Status::Errorf("user {} has uid {} on this data plane but uid {} on the control plane", w.user, u.uid,
                            w.uid);
    }
    return Status::Ok();
  }
  auto added = catalog.AddUser(w.user, {w.admin ? platform::kRoleSysAdmin : platform::kRoleUser}, w.uid);
  if (!added.ok()) return Status::Errorf("user {}: {}", w.user, added.status().message());
  spdlog::info("workspace {}: user {} added with uid {}", w.id, w.user, w.uid);
  return Status::Ok();
}

Phase Apply(const op::ClusterPaths& cluster, const WorkspaceRecord& w) {
  op::Store store(cluster.Dir());
  if (store.HasWorkspace(w.id)) {
    auto local = store.LoadWorkspace(w.id);
    if (!local.ok()) return {w.phase, local.status().message()};
    auto slurm_name = platform::DeriveSlurmUserName(w.user);
    if (!slurm_name.ok() || local->spec.user.name != *slurm_name || local->spec.project != w.project) {
      return {"Failed", fmt::format("a workspace {} of user {} in project {} already exists on this data plane", w.id,
                                    local->spec.user.name, local->spec.project)};
    }
    if (w.desired == "Stopped" && (!local->spec.stopping || (w.cancel_jobs && !local->spec.cancel_jobs))) {
      local->spec.stopping = true;
      local->spec.cancel_jobs = local->spec.cancel_jobs || w.cancel_jobs;
      if (Status s = store.SaveWorkspace(*local); !s.ok()) return {w.phase, s.message()};
      spdlog::info("workspace {}: stopping ({})", w.id, w.cancel_jobs ? "cancelling its jobs" : "waiting for its jobs");
      return {"Stopping", w.cancel_jobs ? "cancelling its jobs" : "waiting for its jobs to finish"};
    }
    std::string message = local->status.message.empty() ? "applied on cluster " + cluster.name : local->status.message;
    if (local->spec.stopping) return {"Stopping", message};
    return {local->status.phase, message};
  }
  if (w.desired == "Stopped") return {"Stopped", "removed from the data plane; datasets and job history kept"};
  // Not here yet: create it, everything checked before anything is written.
  platform::Catalog catalog(cluster.state_dir);
  if (Status s = EnsureUser(catalog, w); !s.ok()) return {"Failed", s.message()};
  op::WorkspaceRequest r;
  r.user = w.user, r.project = w.project, r.tier = w.tier, r.name = w.id, r.max_workers = w.max_workers;
  r.idle_timeout_seconds = w.idle_timeout_seconds, r.token_lifetime_seconds = w.token_lifetime_seconds;
  r.datasets = w.datasets, r.admin = w.admin;
  auto created = op::CreateWorkspace(cluster, catalog, r);
  if (!created.ok()) return {"Failed", created.status().message()};
  spdlog::info("workspace {}: created for {} (uid {}) in project {}", w.id, w.user, w.uid, w.project);
  return {"Pending", "created on cluster " + cluster.name};
}

}  // namespace

Status Agent::ApplyWorkspaces() {
  ASSIGN_OR_RETURN(std::string body, Get(fmt::format("/api/v1/dataplanes/{}/workspaces", opts_.data_plane)));
  json desired = json::parse(body, nullptr, false);
  if (desired.is_discarded() || !desired.contains("workspaces")) return Status::Error("workspaces: answer is not JSON");
  for (const auto& j : desired["workspaces"]) {
    auto w = WorkspaceRecordFromJson(j);
    if (!w.ok()) {
      spdlog::warn("workspaces: {}", w.status().message());
      continue;
    }
    Phase now = Apply(cluster_, *w);
    if (now.phase == w->phase && now.message == w->message) continue;
    RETURN_IF_ERROR(Post(fmt::format("/api/v1/dataplanes/{}/workspaces/{}/status", opts_.data_plane, w->id),
                         json{{"phase", now.phase}, {"message", now.message}}.dump()));
  }
  return Status::Ok();
}

}  // namespace hpc::cp
