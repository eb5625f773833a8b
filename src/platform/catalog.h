// The platform's catalogs, shared by every cluster in a state dir: users (with the Slurm name,
// uid and private gid each gets, and their roles) and hardware tiers (named worker shapes).
// Kept as JSON files under <state>/platform; every change is validated as a whole before it is
// written, so a refused command changes nothing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::platform {

inline constexpr const char* kRoleSysAdmin = "SysAdmin";
inline constexpr const char* kRoleUser = "User";

// The uids (and private gids) platform users get; the control plane hands them out from the
// same range so a user has one uid on every data plane.
inline constexpr int64_t kFirstUid = 20000;
inline constexpr int64_t kLastUid = 59000;
// The gids of project dataset groups: above the users' range and hpcadmins (59999).
inline constexpr int64_t kFirstDatasetGid = 60000;
inline constexpr int64_t kLastDatasetGid = 64999;

struct PlatformUser {
  std::string name;        // as the platform knows the person, e.g. alice or alice@example.org
  std::string slurm_name;  // the Linux/Slurm user name derived from it
  int64_t uid = 0;
  int64_t gid = 0;  // a private group: same number as uid
  std::vector<std::string> roles;
  bool IsSysAdmin() const;
};

struct Tier {
  std::string name;
  int cpus = 1;
  int64_t memory_mib = 1024;
  int gpus = 0;
};

// What one node of the machine can hold.
struct NodeCapacity {
  int cpus = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
};
NodeCapacity LocalNodeCapacity();

// The Slurm name of a platform user: lowercased, the part before '@'; then checked against
// ^[a-z_][a-z0-9_-]{0,31}$ and the reserved system names, the error naming the rule.
Result<std::string> DeriveSlurmUserName(const std::string& platform_name);

// A tier must fit one node (several workers may share the machine, one may not exceed it).
Status CheckTierFits(const Tier& t, const NodeCapacity& node);

class Catalog {
 public:
  explicit Catalog(std::string state_dir) : dir_(std::move(state_dir) + "/platform") {}

  Result<std::vector<PlatformUser>> Users() const;
  Result<PlatformUser> FindUser(const std::string& name) const;
  // Adds a user with the next free uid (or `uid`), outside ids the host already uses.
  Result<PlatformUser> AddUser(const std::string& name, const std::vector<std::string>& roles,
                               std::optional<int64_t> uid = std::nullopt) const;
  // The user as the control plane knows them, here with the same uid (a data plane applying a
  // dispatched workspace): added when absent, refused when this catalog gives the name another uid.
  Status EnsureUser(const std::string& name, int64_t uid, bool admin) const;
  Status SetRoles(const std::string& name, const std::vector<std::string>& roles) const;
  Status RemoveUser(const std::string& name) const;

  // The gid of a project dataset's group, given once and kept (outside ids the host uses), so
  // the dataset's files keep their group across workspaces and restarts.
  Result<int64_t> DatasetGid(const std::string& dataset) const;

  // Built-in tiers until the catalog is first changed.
  Result<std::vector<Tier>> Tiers() const;
  Result<Tier> FindTier(const std::string& name) const;
  Status AddTier(const Tier& t, const NodeCapacity& node) const;
  Status RemoveTier(const std::string& name) const;

 private:
  Status SaveUsers(const std::vector<PlatformUser>& users) const;
  Status SaveTiers(const std::vector<Tier>& tiers) const;
  std::string dir_;
};

}  // namespace hpc::platform
