#include "operator/store.h"

#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "common/files.h"
#include "operator/workspace.h"

namespace hpc::op {
using nlohmann::json;

namespace {

json SpecOnly(json j) {
  j.erase("status");
  return j;
}

std::vector<api::Condition> ConditionsFrom(const json& arr) {
  std::vector<api::Condition> out;
  for (const auto& c : arr) {
    out.push_back({c.value("type", ""), c.value("status", ""), c.value("reason", ""), c.value("message", ""),
                   c.value("lastTransitionTime", "")});
  }
  return out;
}

json ConditionsTo(const std::vector<api::Condition>& cs) {
  json arr = json::array();
  for (const auto& c : cs) {
    arr.push_back({{"type", c.type}, {"status", c.status}, {"reason", c.reason}, {"message", c.message},
                   {"lastTransitionTime", c.last_transition_time}});
  }
  return arr;
}

json ReadJson(const std::string& path) {
  auto text = files::Read(path);
  if (!text.ok()) return json::object();
  json j = json::parse(*text, nullptr, false);
  return j.is_discarded() ? json::object() : j;
}

// Keeps the stored generation when the spec is unchanged, bumps it otherwise.
int64_t NextGeneration(const std::string& path, const json& new_spec) {
  json old = ReadJson(path);
  if (old.empty()) return 1;
  int64_t gen = old["metadata"].value("generation", int64_t{1});
  json a = old, b = new_spec;
  a["metadata"].erase("generation");
  b["metadata"].erase("generation");
  return a == b ? gen : gen + 1;
}

}  // namespace

api::NodeSetStatus NodeSetStatusFrom(const json& st);

bool Store::HasCluster() const { return files::Exists(dir_ + "/cluster.json"); }

Result<api::SlurmCluster> Store::LoadCluster() const {
  ASSIGN_OR_RETURN(api::Manifest m, api::DecodeManifestFile(dir_ + "/cluster.json"));
  if (m.clusters.size() != 1) return Status::Errorf("{}/cluster.json: expected one SlurmCluster", dir_);
  api::SlurmCluster c = m.clusters[0];
  json st = ReadJson(dir_ + "/status/cluster.json");
  c.status.observed_generation = st.value("observedGeneration", int64_t{0});
  c.status.conditions = ConditionsFrom(st.value("conditions", json::array()));
  c.status.endpoints = st.value("endpoints", std::map<std::string, std::string>{});
  c.status.component_versions = st.value("componentVersions", std::map<std::string, std::string>{});
  c.status.components = st.value("components", std::map<std::string, std::string>{});
  return c;
}

Result<api::NodeSet> Store::LoadNodeSet(const std::string& name) const {
  ASSIGN_OR_RETURN(api::Manifest m, api::DecodeManifestFile(dir_ + "/nodesets/" + name + ".json"));
  if (m.nodesets.size() != 1) return Status::Errorf("nodeset \"{}\": stored file holds no NodeSet", name);
  api::NodeSet n = m.nodesets[0];
  n.status = NodeSetStatusFrom(ReadJson(dir_ + "/status/nodesets/" + name + ".json"));
  return n;
}

Result<std::vector<api::NodeSet>> Store::LoadAllNodeSets() const {
  ASSIGN_OR_RETURN(auto out, LoadNodeSets());
  ASSIGN_OR_RETURN(auto ws, LoadWorkspaces());
  for (const auto& w : ws) {
    api::NodeSet n = WorkspaceNodeSet(w, false);
    n.status = LoadNodeSetStatus(n.metadata.name);
    out.push_back(std::move(n));
  }
  return out;
}

api::NodeSetStatus Store::LoadNodeSetStatus(const std::string& name) const {
  return NodeSetStatusFrom(ReadJson(dir_ + "/status/nodesets/" + name + ".json"));
}

bool Store::HasWorkspace(const std::string& name) const {
  return files::Exists(dir_ + "/workspaces/" + name + ".json");
}

Result<api::Workspace> Store::LoadWorkspace(const std::string& name) const {
  if (!HasWorkspace(name)) return Status::Errorf("workspace \"{}\" not found", name);
  ASSIGN_OR_RETURN(std::string text, files::Read(dir_ + "/workspaces/" + name + ".json"));
  json spec = json::parse(text, nullptr, false);
  if (spec.is_discarded()) return Status::Errorf("workspace \"{}\": stored record is not JSON", name);
  return WorkspaceFromJson(spec, ReadJson(dir_ + "/status/workspaces/" + name + ".json"));
}

Result<std::vector<api::Workspace>> Store::LoadWorkspaces() const {
  std::vector<api::Workspace> out;
  for (const auto& f : files::ListDir(dir_ + "/workspaces")) {
    if (f.size() < 6 || f.substr(f.size() - 5) != ".json") continue;
    ASSIGN_OR_RETURN(api::Workspace w, LoadWorkspace(f.substr(0, f.size() - 5)));
    out.push_back(std::move(w));
  }
  return out;
}

Status Store::SaveWorkspace(const api::Workspace& w) const {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/workspaces"));
  return files::WriteAtomic(dir_ + "/workspaces/" + w.metadata.name + ".json", WorkspaceSpecJson(w).dump(2) + "\n");
}

Status Store::SaveWorkspaceStatus(const std::string& name, const api::WorkspaceStatus& s) const {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/status/workspaces"));
  json j = WorkspaceStatusJson(s);
  const std::string path = dir_ + "/status/workspaces/" + name + ".json";
  if (ReadJson(path) == j) return Status::Ok();
  return files::WriteAtomic(path, j.dump(2) + "\n");
}

Status Store::DeleteWorkspace(const std::string& name) const {
  ::unlink((dir_ + "/workspaces/" + name + ".json").c_str());
  ::unlink((dir_ + "/status/workspaces/" + name + ".json").c_str());
  ::unlink((dir_ + "/status/nodesets/" + name + ".json").c_str());
  return Status::Ok();
}

api::NodeSetStatus NodeSetStatusFrom(const json& st) {
  api::NodeSetStatus s;
  s.observed_generation = st.value("observedGeneration", int64_t{0});
  s.desired = st.value("desired", 0);
  s.replicas = st.value("replicas", 0);
  s.ready = st.value("ready", 0);
  s.busy = st.value("busy", 0);
  s.idle = st.value("idle", 0);
  s.draining = st.value("draining", 0);
  s.unhealthy = st.value("unhealthy", 0);
  s.health_drains = st.value("healthDrains", int64_t{0});
  s.replacements = st.value("replacements", int64_t{0});
  s.last_decision = st.value("lastDecision", "");
  s.conditions = ConditionsFrom(st.value("conditions", json::array()));
  for (const auto& e : st.value("events", json::array())) {
    s.events.push_back({e.value("time", ""), e.value("type", ""), e.value("reason", ""), e.value("message", "")});
  }
  return s;
}

Result<std::vector<api::NodeSet>> Store::LoadNodeSets() const {
  std::vector<api::NodeSet> out;
  for (const auto& f : files::ListDir(dir_ + "/nodesets")) {
    if (f.size() < 6 || f.substr(f.size() - 5) != ".json") continue;
    ASSIGN_OR_RETURN(api::NodeSet n, LoadNodeSet(f.substr(0, f.size() - 5)));
    out.push_back(std::move(n));
  }
  return out;
}

Status Store::SaveCluster(api::SlurmCluster c) const {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/status/nodesets"));
  const std::string path = dir_ + "/cluster.json";
  json spec = SpecOnly(api::ToJson(c));
  c.metadata.generation = NextGeneration(path, spec);
  return files::WriteAtomic(path, SpecOnly(api::ToJson(c)).dump(2) + "\n");
}

Status Store::SaveNodeSet(api::NodeSet n) const {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/nodesets"));
  const std::string path = dir_ + "/nodesets/" + n.metadata.name + ".json";
  json spec = SpecOnly(api::ToJson(n));
  n.metadata.generation = NextGeneration(path, spec);
  return files::WriteAtomic(path, SpecOnly(api::ToJson(n)).dump(2) + "\n");
}

Status Store::DeleteNodeSet(const std::string& name) const {
  ::unlink((dir_ + "/nodesets/" + name + ".json").c_str());
  ::unlink((dir_ + "/status/nodesets/" + name + ".json").c_str());
  return Status::Ok();
}

Status Store::SaveClusterStatus(const api::SlurmClusterStatus& s) const {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/status/nodesets"));
  json j = {{"observedGeneration", s.observed_generation}, {"conditions", ConditionsTo(s.conditions)},
            {"endpoints", s.endpoints}, {"componentVersions", s.component_versions}, {"components", s.components}};
  const std::string path = dir_ + "/status/cluster.json";
  if (ReadJson(path) == j) return Status::Ok();  // written only on change
  return files::WriteAtomic(path, j.dump(2) + "\n");
}

Status Store::SaveNodeSetStatus(const std::string& name, const api::NodeSetStatus& s) const {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/status/nodesets"));
  json j = {{"observedGeneration", s.observed_generation}, {"desired", s.desired}, {"replicas", s.replicas},
            {"ready", s.ready}, {"busy", s.busy}, {"idle", s.idle}, {"draining", s.draining},
            {"unhealthy", s.unhealthy}, {"healthDrains", s.health_drains}, {"replacements", s.replacements},
            {"lastDecision", s.last_decision}, {"conditions", ConditionsTo(s.conditions)},
            {"events", api::EventsJson(s.events)}};
  const std::string path = dir_ + "/status/nodesets/" + name + ".json";
  if (ReadJson(path) == j) return Status::Ok();
  return files::WriteAtomic(path, j.dump(2) + "\n");
}

}  // namespace hpc::op
