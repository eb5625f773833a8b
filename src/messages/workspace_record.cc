#include "messages/workspace_record.h"

namespace hpc::cp {
using nlohmann::json;

json ToJson(const WorkspaceRecord& w) {
  return {{"id", w.id},
          {"project", w.project},
          {"dataPlane", w.data_plane},
          {"user", w.user},
          {"uid", w.uid},
          {"admin", w.admin},
          {"tier", w.tier},
          {"maxWorkers", w.max_workers},
          {"idleTimeoutSeconds", w.idle_timeout_seconds},
          {"tokenLifetimeSeconds", w.token_lifetime_seconds},
          {"datasets", w.datasets},
          {"environment", w.environment},
          {"desired", w.desired},
          {"cancelJobs", w.cancel_jobs},
          {"phase", w.phase},
          {"message", w.message},
          {"createdAt", w.created_at},
          {"updatedAt", w.updated_at}};
}

Result<WorkspaceRecord> WorkspaceRecordFromJson(const json& j) {
  try {
    WorkspaceRecord w;
    w.id = j.at("id"), w.project = j.at("project"), w.data_plane = j.at("dataPlane"), w.user = j.at("user");
    w.uid = j.at("uid"), w.admin = j.at("admin"), w.tier = j.at("tier"), w.max_workers = j.at("maxWorkers");
    w.idle_timeout_seconds = j.at("idleTimeoutSeconds"), w.token_lifetime_seconds = j.at("tokenLifetimeSeconds");
    w.datasets = j.at("datasets").get<std::vector<std::string>>();
    w.environment = j.value("environment", "");  // absent in records made before environments
    w.desired = j.value("desired", "Running"), w.cancel_jobs = j.value("cancelJobs", false);
    w.phase = j.value("phase", "Pending"), w.message = j.value("message", "");
    w.created_at = j.value("createdAt", int64_t{0}), w.updated_at = j.value("updatedAt", int64_t{0});
    return w;
  } catch (const json::exception& e) {
    return Status::Errorf("workspace record: {}", e.what());
  }
}

bool ValidPhase(const std::string& phase) {
  return phase == "Pending" || phase == "Ready" || phase == "Stopping" || phase == "Stopped" || phase == "Failed";
}

}  // namespace hpc::cp
