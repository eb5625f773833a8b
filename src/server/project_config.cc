#include "server/project_config.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "api/codec.h"
#include "api/environments.h"
#include "api/validation.h"
#include "platform/catalog.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

Status NameField(const std::string& field, const std::string& v) {
  if (Status s = api::ValidateResourceName(v); !s.ok()) return Status::InvalidArgument(field, s.message());
  return Status::Ok();
}

Result<std::string> StringField(const json& j, const std::string& field, const std::string& fallback) {
  if (!j.contains(field)) return fallback;
  if (!j[field].is_string()) return Status::InvalidArgument(field, "must be a string");
  return j[field].get<std::string>();
}

Result<std::vector<std::string>> NameList(const json& j, const std::string& field) {
  std::vector<std::string> out;
  if (!j.contains(field)) return out;
  if (!j[field].is_array()) return Status::InvalidArgument(field, "must be a list of names");
  for (size_t i = 0; i < j[field].size(); ++i) {
    const json& v = j[field][i];
    if (!v.is_string()) return Status::InvalidArgument(fmt::format("{}[{}]", field, i), "must be a string");
    out.push_back(v.get<std::string>());
  }
  return out;
}

Result<int> IntField(const json& j, const std::string& field, int fallback, int lo, int hi) {
  if (!j.contains(field)) return fallback;
  if (!j[field].is_number_integer() || j[field].get<int64_t>() < lo || j[field].get<int64_t>() > hi) {
    return Status::InvalidArgument(field, fmt::format("must be an integer {}-{}", lo, hi));
  }
  return j[field].get<int>();
}

// "30s", "5m", "8h", "7d", or whole seconds.
Result<int64_t> DurationField(const json& j, const std::string& field, int64_t fallback, int64_t lo, int64_t hi) {
  if (!j.contains(field)) return fallback;
  int64_t v = 0;
  if (j[field].is_number_integer()) {
    v = j[field].get<int64_t>();
  } else if (j[field].is_string()) {
    auto d = api::ParseDurationSeconds(j[field].get<std::string>());
    if (!d.ok()) return Status::InvalidArgument(field, d.status().message());
    v = *d;
  } else {
    return Status::InvalidArgument(field, "must be a duration such as \"30s\", \"5m\", \"8h\"");
  }
  if (v < lo || v > hi) {
    return Status::InvalidArgument(field, fmt::format("must be between {}s and {}s (got {}s)", lo, hi, v));
  }
  return v;
}

Status OnlyKnownFields(const json& j, std::initializer_list<const char*> known) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
      return Status::InvalidArgument(it.key(), "unknown field");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<ProjectConfig> ProjectConfigFromJson(const std::string& name, const json& j) {
  RETURN_IF_ERROR(OnlyKnownFields(j, {"dataPlane", "defaultTier", "tiers", "maxWorkers", "idleTimeout", "tokenLifetime",
                                      "datasets", "sysAdmins", "workspaceEnvironment"}));
  ProjectConfig p;
  p.name = name;
  RETURN_IF_ERROR(NameField("name", name));
  if (!j.contains("dataPlane")) {
    return Status::InvalidArgument("dataPlane", "required (the data plane the project's workspaces run on)");
  }
  ASSIGN_OR_RETURN(p.data_plane, StringField(j, "dataPlane", ""));
  RETURN_IF_ERROR(NameField("dataPlane", p.data_plane));
  ASSIGN_OR_RETURN(p.default_tier, StringField(j, "defaultTier", p.default_tier));
  RETURN_IF_ERROR(NameField("defaultTier", p.default_tier));
  ASSIGN_OR_RETURN(p.tiers, NameList(j, "tiers"));
  for (size_t i = 0; i < p.tiers.size(); ++i) RETURN_IF_ERROR(NameField(fmt::format("tiers[{}]", i), p.tiers[i]));
  if (std::find(p.tiers.begin(), p.tiers.end(), p.default_tier) == p.tiers.end()) p.tiers.push_back(p.default_tier);
  ASSIGN_OR_RETURN(p.max_workers, IntField(j, "maxWorkers", p.max_workers, 1, 128));
  ASSIGN_OR_RETURN(p.idle_timeout_seconds, DurationField(j, "idleTimeout", p.idle_timeout_seconds, 10, 7 * 86400));
  ASSIGN_OR_RETURN(p.token_lifetime_seconds,
                   DurationField(j, "tokenLifetime", p.token_lifetime_seconds, 10, 30 * 86400));
  ASSIGN_OR_RETURN(p.datasets, NameList(j, "datasets"));
  for (size_t i = 0; i < p.datasets.size(); ++i)
    RETURN_IF_ERROR(NameField(fmt::format("datasets[{}]", i), p.datasets[i]));
  if (p.datasets.empty()) p.datasets = {name};
  ASSIGN_OR_RETURN(p.sys_admins, NameList(j, "sysAdmins"));
  for (size_t i = 0; i < p.sys_admins.size(); ++i) {
    if (auto s = platform::DeriveSlurmUserName(p.sys_admins[i]); !s.ok()) {
      return Status::InvalidArgument(fmt::format("sysAdmins[{}]", i), s.status().message());
    }
  }
  ASSIGN_OR_RETURN(p.workspace_environment, StringField(j, "workspaceEnvironment", ""));
  if (!p.workspace_environment.empty()) {
    if (Status s = api::ValidateEnvironmentName(p.workspace_environment); !s.ok()) {
      return Status::InvalidArgument("workspaceEnvironment", s.message());
    }
  }
  return p;
}

json ToJson(const ProjectConfig& p) {
  return {{"name", p.name},
          {"dataPlane", p.data_plane},
          {"defaultTier", p.default_tier},
          {"tiers", p.tiers},
          {"maxWorkers", p.max_workers},
          {"idleTimeoutSeconds", p.idle_timeout_seconds},
          {"tokenLifetimeSeconds", p.token_lifetime_seconds},
          {"datasets", p.datasets},
          {"sysAdmins", p.sys_admins},
          {"workspaceEnvironment", p.workspace_environment},
          {"updatedAt", p.updated_at}};
}

Result<WorkspaceRecord> BuildWorkspace(const ProjectConfig& project, const std::string& user, const json& request) {
  RETURN_IF_ERROR(OnlyKnownFields(request, {"user", "name", "tier", "maxWorkers"}));
  auto slurm_user = platform::DeriveSlurmUserName(user);
  if (!slurm_user.ok()) return Status::InvalidArgument("user", slurm_user.status().message());
  WorkspaceRecord w;
  w.project = project.name;
  w.data_plane = project.data_plane;
  w.user = user;
  w.admin = std::find(project.sys_admins.begin(), project.sys_admins.end(), user) != project.sys_admins.end();
  ASSIGN_OR_RETURN(w.id, StringField(request, "name", api::DefaultWorkspaceName(*slurm_user, project.name)));
  if (Status s = api::ValidateResourceName(w.id); !s.ok()) {
    return Status::InvalidArgument("name",
                                   s.message() + (request.contains("name") ? "" : " (give another with \"name\")"));
  }
  ASSIGN_OR_RETURN(w.tier, StringField(request, "tier", project.default_tier));
  if (std::find(project.tiers.begin(), project.tiers.end(), w.tier) == project.tiers.end()) {
    return Status::InvalidArgument(
        "tier", fmt::format("project {} offers {} (got \"{}\")", project.name, fmt::join(project.tiers, ", "), w.tier));
  }
  ASSIGN_OR_RETURN(w.max_workers, IntField(request, "maxWorkers", project.max_workers, 1, project.max_workers));
  w.idle_timeout_seconds = project.idle_timeout_seconds;
  w.token_lifetime_seconds = project.token_lifetime_seconds;
  w.datasets = project.datasets;
  w.environment = project.workspace_environment;
  return w;
}

}  // namespace hpc::cp
