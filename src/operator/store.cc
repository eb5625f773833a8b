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

bool Store::HasCluster() const { return files::Exists(dir_ + "/cluster.json"); }

Result<api::SlurmCluster> Store::LoadCluster() const {
  ASSIGN_OR_RETURN(api::Manifest m, api::DecodeManifestFile(dir_ + "/cluster.json"));
  if (m.clusters.size() != 1) return Status::Errorf("{}/cluster.json: expected one SlurmCluster", dir_);
  api::SlurmCluster c = m.clusters[0];
  c.status = api::ClusterStatusFromJson(ReadJson(dir_ + "/status/cluster.json"));
  return c;
}

Result<api::NodeSet> Store::LoadNodeSet(const std::string& name) const {
  ASSIGN_OR_RETURN(api::Manifest m, api::DecodeManifestFile(dir_ + "/nodesets/" + name + ".json"));
  if (m.nodesets.size() != 1) return Status::Errorf("nodeset \"{}\": stored file holds no NodeSet", name);
  api::NodeSet n = m.nodesets[0];
  n.status = api::NodeSetStatusFromJson(ReadJson(dir_ + "/status/nodesets/" + name + ".json"));
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
  return api::NodeSetStatusFromJson(ReadJson(dir_ + "/status/nodesets/" + name + ".json"));
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
  const json j = api::StatusToJson(s);
  const std::string path = dir_ + "/status/cluster.json";
  if (ReadJson(path) == j) return Status::Ok();  // written only on change
  return files::WriteAtomic(path, j.dump(2) + "\n");
}

Status Store::SaveNodeSetStatus(const std::string& name, const api::NodeSetStatus& s) const {
  RETURN_IF_ERROR(files::MakeDirs(dir_ + "/status/nodesets"));
  const json j = api::StatusToJson(s);
  const std::string path = dir_ + "/status/nodesets/" + name + ".json";
  if (ReadJson(path) == j) return Status::Ok();
  return files::WriteAtomic(path, j.dump(2) + "\n");
}

}  // namespace hpc::op
