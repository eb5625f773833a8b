#include "operator/workspace.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "api/environments.h"
#include "api/validation.h"
#include "operator/builders.h"
#include "platform/catalog.h"

namespace hpc::op {
using nlohmann::json;

api::NodeSet WorkspaceNodeSet(const api::Workspace& w, bool jobs_gone) {
  api::NodeSet ns;
  ns.metadata.name = w.metadata.name;
  ns.metadata.namespace_ = w.spec.cluster;
  ns.metadata.labels[kLabelWorkspace] = w.metadata.name;
  auto& s = ns.spec;
  s.cluster = w.spec.cluster;
  s.max_replicas = w.spec.max_workers;
  s.idle_timeout_seconds = w.spec.idle_timeout_seconds;
  s.resources = w.spec.resources;
  s.partition.name = w.metadata.name;
  // Enforced by slurmctld: only members of these groups may submit to the partition.
  s.partition.options["AllowGroups"] = w.spec.user.name + "," + kAdminGroup;
  if (w.spec.stopping) {
    // DRAIN refuses new jobs while queued and running ones finish on the workers that remain.
    s.partition.state = "DRAIN";
    if (jobs_gone) s.replicas = 0;
  }
  for (const auto& d : w.spec.datasets) s.datasets.push_back(WorkspaceDataset(w, d));
  return ns;
}

api::Dataset WorkspaceDataset(const api::Workspace& w, const std::string& dataset) {
  auto gid = w.spec.dataset_gids.find(dataset);
  return {dataset, "/datasets/" + dataset, "", gid == w.spec.dataset_gids.end() ? 0 : gid->second};
}

std::vector<DatasetGroup> WorkspaceDatasetGroups(const std::vector<api::Workspace>& ws) {
  std::map<std::string, DatasetGroup> groups;
  for (const auto& w : ws) {
    for (const auto& dataset : w.spec.datasets) {
      const int64_t gid = WorkspaceDataset(w, dataset).group_gid;
      if (gid == 0) continue;
      DatasetGroup& g = groups[dataset];
      g.name = DatasetGroupName(dataset);
      g.gid = gid;
      if (std::find(g.members.begin(), g.members.end(), w.spec.user.name) == g.members.end()) {
        g.members.push_back(w.spec.user.name);
      }
    }
  }
  std::vector<DatasetGroup> out;
  for (auto& [name, g] : groups) out.push_back(std::move(g));
  return out;
}

std::vector<api::ClusterUser> WorkspaceUsers(const std::vector<api::Workspace>& ws) {
  std::vector<api::ClusterUser> out;
  std::set<std::string> seen;
  for (const auto& w : ws) {
    if (seen.insert(w.spec.user.name).second) out.push_back(w.spec.user);
  }
  return out;
}

json WorkspaceSpecJson(const api::Workspace& w) {
  const auto& s = w.spec;
  return {
      {"apiVersion", api::kApiVersion},
      {"kind", api::kKindWorkspace},
      {"metadata", {{"name", w.metadata.name}, {"namespace", s.cluster}, {"generation", w.metadata.generation}}},
      {"spec",
       {{"cluster", s.cluster},
        {"user", {{"name", s.user.name}, {"uid", s.user.uid}, {"gid", s.user.gid}, {"admin", s.user.admin}}},
        {"project", s.project},
        {"tier", s.tier},
        {"resources", {{"cpus", s.resources.cpus}, {"memoryMiB", s.resources.memory_mib}, {"gpus", s.resources.gpus}}},
        {"maxWorkers", s.max_workers},
        {"idleTimeoutSeconds", s.idle_timeout_seconds},
        {"tokenLifetimeSeconds", s.token_lifetime_seconds},
        {"datasets", s.datasets},
        {"datasetGroups", s.dataset_gids},
        {"environment", s.environment},
        {"stopping", s.stopping},
        {"cancelJobs", s.cancel_jobs}}}};
}

json WorkspaceStatusJson(const api::WorkspaceStatus& s) {
  json conditions = json::array();
  for (const auto& c : s.conditions) {
    conditions.push_back({{"type", c.type},
                          {"status", c.status},
                          {"reason", c.reason},
                          {"message", c.message},
                          {"lastTransitionTime", c.last_transition_time}});
  }
  return {{"phase", s.phase},
          {"message", s.message},
          {"tokenExpires", s.token_expires},
          {"activeJobs", s.active_jobs},
          {"released", s.released},
          {"conditions", conditions}};
}

Result<api::Workspace> WorkspaceFromJson(const json& j, const json& status) {
  try {
    api::Workspace w;
    w.metadata.name = j.at("metadata").at("name").get<std::string>();
    w.metadata.generation = j.at("metadata").value("generation", int64_t{1});
    const json& s = j.at("spec");
    w.spec.cluster = s.at("cluster").get<std::string>();
    w.metadata.namespace_ = w.spec.cluster;
    const json& u = s.at("user");
    w.spec.user = {u.at("name").get<std::string>(), u.at("uid").get<int64_t>(), u.at("gid").get<int64_t>(),
                   u.value("admin", false), ""};
    w.spec.project = s.at("project").get<std::string>();
    w.spec.tier = s.value("tier", "");
    const json& r = s.at("resources");
    w.spec.resources = {r.at("cpus").get<int>(), r.at("memoryMiB").get<int64_t>(), r.value("gpus", 0)};
    w.spec.max_workers = s.at("maxWorkers").get<int>();
    w.spec.idle_timeout_seconds = s.value("idleTimeoutSeconds", int64_t{300});
    w.spec.token_lifetime_seconds = s.value("tokenLifetimeSeconds", int64_t{8 * 3600});
    w.spec.datasets = s.value("datasets", std::vector<std::string>{});
    w.spec.dataset_gids = s.value("datasetGroups", std::map<std::string, int64_t>{});
    w.spec.environment = s.value("environment", "");
    w.spec.stopping = s.value("stopping", false);
    w.spec.cancel_jobs = s.value("cancelJobs", false);
    w.status = WorkspaceStatusFromJson(status);
    return w;
  } catch (const json::exception& e) {
    return Status::Errorf("workspace record: {}", e.what());
  }
}

api::WorkspaceStatus WorkspaceStatusFromJson(const json& status) {
  api::WorkspaceStatus st;
  if (!status.is_object()) return st;
  try {
    st.phase = status.value("phase", "Pending");
    st.message = status.value("message", "");
    st.token_expires = status.value("tokenExpires", int64_t{0});
    st.active_jobs = status.value("activeJobs", 0);
    st.released = status.value("released", false);
    for (const auto& c : status.value("conditions", json::array())) {
      st.conditions.push_back({c.value("type", ""), c.value("status", ""), c.value("reason", ""),
                               c.value("message", ""), c.value("lastTransitionTime", "")});
    }
  } catch (const json::exception&) {
    // Lenient, as every status codec (a wrong type keeps the default): it is recomputed by the
    // next pass.
  }
  return st;
}

Status ValidateWorkspace(const api::Workspace& w) {
  std::string subject = fmt::format("workspace \"{}\"", w.metadata.name);
  if (Status s = api::ValidateResourceName(w.metadata.name); !s.ok()) {
    return Status::Errorf("{}: name: {}", subject, s.message());
  }
  if (Status s = api::ValidateUserName(w.spec.user.name); !s.ok())
    return Status::Errorf("{}: user: {}", subject, s.message());
  // As for a cluster's users: never a system account (root, slurm, munge), whoever wrote it.
  for (const auto& [field, id] : {std::pair{"uid", w.spec.user.uid}, std::pair{"gid", w.spec.user.gid}}) {
    if (id < 1000 || id > 60000) {
      return Status::Errorf("{}: user.{}: must be 1000-60000, outside system ids (got {})", subject, field, id);
    }
  }
  if (Status s = api::ValidateResourceName(w.spec.project); !s.ok()) {
    return Status::Errorf("{}: project: {}", subject, s.message());
  }
  if (w.spec.max_workers < 1 || w.spec.max_workers > 128) {
    return Status::Errorf("{}: maxWorkers: must be 1-128 (got {})", subject, w.spec.max_workers);
  }
  if (w.spec.token_lifetime_seconds < 10 || w.spec.token_lifetime_seconds > 30 * 86400) {
    return Status::Errorf("{}: tokenLifetime: must be between 10s and 30d (got {}s)", subject,
                          w.spec.token_lifetime_seconds);
  }
  for (const auto& d : w.spec.datasets) {
    if (Status s = api::ValidateResourceName(d); !s.ok())
      return Status::Errorf("{}: datasets: {}", subject, s.message());
  }
  // A dataset's group becomes every login pod's supplementary group and its volume's owner: only
  // the range the platform hands out (never root's or a system group).
  for (const auto& [dataset, gid] : w.spec.dataset_gids) {
    if (gid < platform::kFirstDatasetGid || gid > platform::kLastDatasetGid) {
      return Status::Errorf("{}: datasetGroups.{}: must be {}-{} (got {})", subject, dataset,
                            platform::kFirstDatasetGid, platform::kLastDatasetGid, gid);
    }
  }
  if (!w.spec.environment.empty()) {
    if (Status s = api::ValidateEnvironmentName(w.spec.environment); !s.ok()) {
      return Status::Errorf("{}: environment: {}", subject, s.message());
    }
  }
  return api::ValidateShape(WorkspaceNodeSet(w, false));
}

}  // namespace hpc::op
