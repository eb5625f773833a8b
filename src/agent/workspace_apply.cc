#include "agent/workspace_apply.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "agent/agent.h"
#include "platform/catalog.h"

namespace hpc::cp {
using nlohmann::json;

WorkspacePhase ApplyWorkspaceRecord(DataPlaneAccess& dp, const WorkspaceRecord& w) {
  auto local = dp.FindWorkspace(w.id);
  if (!local.ok()) return {w.phase, local.status().message()};
  if (*local) {
    const api::Workspace& ws = **local;
    auto slurm_name = platform::DeriveSlurmUserName(w.user);
    if (!slurm_name.ok() || ws.spec.user.name != *slurm_name || ws.spec.project != w.project) {
      return {"Failed", fmt::format("a workspace {} of user {} in project {} already exists on this data plane", w.id,
                                    ws.spec.user.name, ws.spec.project)};
    }
    if (w.desired == "Stopped" && (!ws.spec.stopping || (w.cancel_jobs && !ws.spec.cancel_jobs))) {
      if (Status s = dp.StopWorkspace(w.id, w.cancel_jobs); !s.ok()) return {w.phase, s.message()};
      spdlog::info("workspace {}: stopping ({})", w.id, w.cancel_jobs ? "cancelling its jobs" : "waiting for its jobs");
      return {"Stopping", w.cancel_jobs ? "cancelling its jobs" : "waiting for its jobs to finish"};
    }
    std::string message = ws.status.message.empty() ? "applied on cluster " + dp.ClusterName() : ws.status.message;
    if (ws.spec.stopping) return {"Stopping", message};
    return {ws.status.phase, message};
  }
  if (w.desired == "Stopped") return {"Stopped", "removed from the data plane; datasets and job history kept"};
  // Not here yet: created, everything checked before anything is written.
  WorkspaceCreation c;
  c.id = w.id, c.user = w.user, c.uid = w.uid, c.admin = w.admin, c.project = w.project, c.tier = w.tier;
  c.max_workers = w.max_workers, c.idle_timeout_seconds = w.idle_timeout_seconds;
  c.token_lifetime_seconds = w.token_lifetime_seconds, c.datasets = w.datasets, c.environment = w.environment;
  if (Status s = dp.CreateWorkspace(c); !s.ok()) return {"Failed", s.message()};
  spdlog::info("workspace {}: created for {} (uid {}) in project {}", w.id, w.user, w.uid, w.project);
  return {"Pending", "created on cluster " + dp.ClusterName()};
}

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
    WorkspacePhase now = ApplyWorkspaceRecord(*dp_, *w);
    if (now.phase == w->phase && now.message == w->message) continue;
    RETURN_IF_ERROR(Post(fmt::format("/api/v1/dataplanes/{}/workspaces/{}/status", opts_.data_plane, w->id),
                         json{{"phase", now.phase}, {"message", now.message}}.dump()));
  }
  return Status::Ok();
}

}  // namespace hpc::cp
