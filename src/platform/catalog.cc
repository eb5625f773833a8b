#include "platform/catalog.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "api/validation.h"
#include "common/files.h"

namespace hpc::platform {
using nlohmann::json;

namespace {

Result<json> ReadJsonFile(const std::string& path, json fallback) {
  if (!files::Exists(path)) return fallback;
  ASSIGN_OR_RETURN(std::string text, files::Read(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Status::Errorf("{}: not valid JSON", path);
  return j;
}

// Numeric ids in the third field of a passwd/group file.
std::set<int64_t> IdsInUse(const std::string& path) {
  std::set<int64_t> ids;
  auto text = files::Read(path);
  if (!text.ok()) return ids;
  std::istringstream in(*text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ls(line);
    std::string part;
    while (std::getline(ls, part, ':')) f.push_back(part);
    if (f.size() >= 3) ids.insert(std::atoll(f[2].c_str()));
  }
  return ids;
}

Status ValidateRoles(const std::vector<std::string>& roles) {
  for (const auto& r : roles) {
    if (r != kRoleSysAdmin && r != kRoleUser) {
      return Status::Errorf("role \"{}\" is unknown: roles are {} and {}", r, kRoleSysAdmin, kRoleUser);
    }
  }
  return Status::Ok();
}

json UserJson(const PlatformUser& u) {
  return {{"name", u.name}, {"slurmName", u.slurm_name}, {"uid", u.uid}, {"gid", u.gid}, {"roles", u.roles}};
}

json TierJson(const Tier& t) {
  return {{"name", t.name}, {"cpus", t.cpus}, {"memoryMiB", t.memory_mib}, {"gpus", t.gpus}};
}

std::vector<Tier> BuiltinTiers() { return {{"small", 1, 1024, 0}, {"medium", 2, 2048, 0}}; }

}  // namespace

bool PlatformUser::IsSysAdmin() const { return std::find(roles.begin(), roles.end(), kRoleSysAdmin) != roles.end(); }

NodeCapacity LocalNodeCapacity() {
  NodeCapacity n;
  n.cpus = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN));
  n.memory_mib = static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE) / (1024 * 1024);
  for (int i = 0; i < 64; ++i) {
    if (files::Exists(fmt::format("/dev/nvidia{}", i))) n.gpus++;
  }
  return n;
}

Result<std::string> DeriveSlurmUserName(const std::string& platform_name) {
  std::string n = platform_name.substr(0, platform_name.find('@'));
  std::transform(n.begin(), n.end(), n.begin(), [](unsigned char c) { return std::tolower(c); });
  RETURN_IF_ERROR(api::ValidateUserName(n));
  return n;
}

Status CheckTierFits(const Tier& t, const NodeCapacity& node) {
  if (Status s = api::ValidateResourceName(t.name); !s.ok()) return Status::Errorf("tier name: {}", s.message());
  if (t.cpus < 1) return Status::Errorf("tier \"{}\": cpus must be >= 1 (got {})", t.name, t.cpus);
  if (t.memory_mib < 64) return Status::Errorf("tier \"{}\": memoryMiB must be >= 64 (got {})", t.name, t.memory_mib);
  if (t.gpus < 0) return Status::Errorf("tier \"{}\": gpus must be >= 0 (got {})", t.name, t.gpus);
  if (t.cpus > node.cpus || t.memory_mib > node.memory_mib || t.gpus > node.gpus) {
    return Status::Errorf(
        "tier \"{}\" asks {} CPUs, {} MiB and {} GPUs per worker; one node of this machine holds {} CPUs, {} MiB "
        "and {} GPUs",
        t.name, t.cpus, t.memory_mib, t.gpus, node.cpus, node.memory_mib, node.gpus);
  }
  return Status::Ok();
}

Result<std::vector<PlatformUser>> Catalog::Users() const {
  ASSIGN_OR_RETURN(json j, ReadJsonFile(dir_ + "/users.json", json::array()));
  std::vector<PlatformUser> out;
  try {
    for (const auto& u : j) {
      out.push_back({u.at("name").get<std::string>(), u.at("slurmName").get<std::string>(), u.at("uid").get<int64_t>(),
                     u.at("gid").get<int64_t>(), u.value("roles", std::vector<std::string>{})});
    }
  } catch (const json::exception& e) {
    return Status::Errorf("{}/users.json: {}", dir_, e.what());
  }
  return out;
}

Result<PlatformUser> Catalog::FindUser(const std::string& name) const {
  ASSIGN_OR_RETURN(auto users, Users());
  for (const auto& u : users) {
    if (u.name == name || u.slurm_name == name) return u;
  }
  return Status::Errorf("user \"{}\" is not in the platform's catalog (add it with `hpcplane users add {}`)", name,
                        name);
}

Result<PlatformUser> Catalog::AddUser(const std::string& name, const std::vector<std::string>& roles,
                                      std::optional<int64_t> uid) const {
  ASSIGN_OR_RETURN(std::string slurm_name, DeriveSlurmUserName(name));
  RETURN_IF_ERROR(ValidateRoles(roles));
  ASSIGN_OR_RETURN(auto users, Users());
  std::set<int64_t> taken = IdsInUse("/etc/passwd");
  for (int64_t g : IdsInUse("/etc/group")) taken.insert(g);
  for (const auto& u : users) {
    if (u.name == name || u.slurm_name == slurm_name) {
      return Status::Errorf("user \"{}\" already exists (Slurm name {}, uid {})", name, u.slurm_name, u.uid);
    }
    taken.insert(u.uid);
  }
  PlatformUser u{name, slurm_name, 0, 0, roles.empty() ? std::vector<std::string>{kRoleUser} : roles};
  if (uid) {
    if (*uid < kFirstUid || *uid > kLastUid) {
      return Status::Errorf("uid {} is outside the range for platform users ({}-{})", *uid, kFirstUid, kLastUid);
    }
    if (taken.count(*uid)) return Status::Errorf("uid {} is already in use", *uid);
    u.uid = *uid;
  } else {
    for (int64_t id = kFirstUid; id <= kLastUid && u.uid == 0; ++id) {
      if (!taken.count(id)) u.uid = id;
    }
    if (u.uid == 0) return Status::Error("no free uid left for platform users");
  }
  u.gid = u.uid;
  users.push_back(u);
  RETURN_IF_ERROR(SaveUsers(users));
  return u;
}

Status Catalog::EnsureUser(const std::string& name, int64_t uid, bool admin) const {
  ASSIGN_OR_RETURN(auto users, Users());
  for (const auto& u : users) {
    if (u.name != name) continue;
    if (u.uid != uid) {
      return Status::Errorf("user {} has uid {} on this data plane but uid {} on the control plane", name, u.uid, uid);
    }
    return Status::Ok();
  }
  auto added = AddUser(name, {admin ? kRoleSysAdmin : kRoleUser}, uid);
  if (!added.ok()) return Status::Errorf("user {}: {}", name, added.status().message());
  spdlog::info("user {} added with uid {}", name, uid);
  return Status::Ok();
}

Status Catalog::SetRoles(const std::string& name, const std::vector<std::string>& roles) const {
  RETURN_IF_ERROR(ValidateRoles(roles));
  ASSIGN_OR_RETURN(auto users, Users());
  for (auto& u : users) {
    if (u.name == name || u.slurm_name == name) {
      u.roles = roles;
      return SaveUsers(users);
    }
  }
  return Status::Errorf("user \"{}\" is not in the platform's catalog", name);
}

Status Catalog::RemoveUser(const std::string& name) const {
  ASSIGN_OR_RETURN(auto users, Users());
  size_t before = users.size();
  std::erase_if(users, [&](const PlatformUser& u) { return u.name == name || u.slurm_name == name; });
  if (users.size() == before) return Status::Errorf("user \"{}\" is not in the platform's catalog", name);
  return SaveUsers(users);
}

Status Catalog::SaveUsers(const std::vector<PlatformUser>& users) const {
  json j = json::array();
  for (const auto& u : users) j.push_back(UserJson(u));
  RETURN_IF_ERROR(files::MakeDirs(dir_, 0700));
  return files::WriteAtomic(dir_ + "/users.json", j.dump(2) + "\n", 0600);
}

Result<int64_t> Catalog::DatasetGid(const std::string& dataset) const {
  if (Status s = api::ValidateResourceName(dataset); !s.ok()) return Status::Errorf("dataset: {}", s.message());
  const std::string path = dir_ + "/dataset-groups.json";
  ASSIGN_OR_RETURN(json j, ReadJsonFile(path, json::object()));
  if (!j.is_object()) return Status::Errorf("{}: expected an object of dataset name to gid", path);
  if (j.contains(dataset)) {
    if (!j[dataset].is_number_integer()) return Status::Errorf("{}: {}: gid must be an integer", path, dataset);
    return j[dataset].get<int64_t>();
  }
  std::set<int64_t> taken = IdsInUse("/etc/group");
  for (const auto& [name, gid] : j.items()) {
    if (gid.is_number_integer()) taken.insert(gid.get<int64_t>());
  }
  int64_t gid = kFirstDatasetGid;
  while (gid <= kLastDatasetGid && taken.count(gid)) ++gid;
  if (gid > kLastDatasetGid) {
    return Status::Errorf("no free dataset group id left in {}-{}", kFirstDatasetGid, kLastDatasetGid);
  }
  j[dataset] = gid;
  RETURN_IF_ERROR(files::MakeDirs(dir_, 0700));
  RETURN_IF_ERROR(files::WriteAtomic(path, j.dump(2) + "\n", 0600));
  return gid;
}

Result<std::vector<Tier>> Catalog::Tiers() const {
  if (!files::Exists(dir_ + "/tiers.json")) return BuiltinTiers();
  ASSIGN_OR_RETURN(json j, ReadJsonFile(dir_ + "/tiers.json", json::array()));
  std::vector<Tier> out;
  try {
    for (const auto& t : j) {
      out.push_back({t.at("name").get<std::string>(), t.at("cpus").get<int>(), t.at("memoryMiB").get<int64_t>(),
                     t.value("gpus", 0)});
    }
  } catch (const json::exception& e) {
    return Status::Errorf("{}/tiers.json: {}", dir_, e.what());
  }
  return out;
}

Result<Tier> Catalog::FindTier(const std::string& name) const {
  ASSIGN_OR_RETURN(auto tiers, Tiers());
  std::string known;
  for (const auto& t : tiers) {
    if (t.name == name) return t;
    known += (known.empty() ? "" : ", ") + t.name;
  }
  return Status::Errorf("tier \"{}\" is not in the catalog (known: {})", name, known);
}

Status Catalog::AddTier(const Tier& t, const NodeCapacity& node) const {
  RETURN_IF_ERROR(CheckTierFits(t, node));
  ASSIGN_OR_RETURN(auto tiers, Tiers());
  for (const auto& existing : tiers) {
    if (existing.name == t.name) return Status::Errorf("tier \"{}\" already exists", t.name);
  }
  tiers.push_back(t);
  return SaveTiers(tiers);
}

Status Catalog::RemoveTier(const std::string& name) const {
  ASSIGN_OR_RETURN(auto tiers, Tiers());
  size_t before = tiers.size();
  std::erase_if(tiers, [&](const Tier& t) { return t.name == name; });
  if (tiers.size() == before) return Status::Errorf("tier \"{}\" is not in the catalog", name);
  return SaveTiers(tiers);
}

Status Catalog::SaveTiers(const std::vector<Tier>& tiers) const {
  json j = json::array();
  for (const auto& t : tiers) j.push_back(TierJson(t));
  RETURN_IF_ERROR(files::MakeDirs(dir_, 0700));
  return files::WriteAtomic(dir_ + "/tiers.json", j.dump(2) + "\n", 0644);
}

}  // namespace hpc::platform
