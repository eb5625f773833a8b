// Keeps slurmdbd's associations in step with the cluster's users: the cluster itself, one
// account per project, each user under it with Slurm's administrator level when the user is an
// admin (SysAdmin). Runs sacctmgr in the controller pod as SlurmUser; remembers what it has done
// so a steady cluster costs nothing. Users are never removed: their job history stays queryable.
//
// Ownership: the administrator level is changed only where hpcplane's wish differs from what
// it last set itself (kept in the ownership ledger): a SysAdmin gets Administrator, and losing
// the role takes back only a level hpcplane granted. A level an admin gave a user with sacctmgr
// stays theirs; accounts, QOS and limits set by admins are never touched.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "common/result.h"
#include "operator/ownership.h"
#include "runtime/pod_runtime.h"
#include "slurm/controllers.h"

namespace hpc::op {

struct Association {
  std::string user;
  std::string account;
  bool admin = false;
  bool operator<(const Association& o) const {
    return std::tie(user, account, admin) < std::tie(o.user, o.account, o.admin);
  }
};

class AccountingSync {
 public:
  AccountingSync(runtime::PodRuntime* rt, std::string controller_pod) : rt_(rt), pod_(std::move(controller_pod)) {}
  // In whichever pod `pod` names when a command runs (not owned).
  AccountingSync(runtime::PodRuntime* rt, const slurm::CommandPod* pod) : rt_(rt), command_pod_(pod) {}

  Status Sync(const std::string& cluster, const std::vector<Association>& want, OwnershipLedger* ledger);
  bool Synced(const std::string& user) const;

 private:
  // sacctmgr -i ARGS; "already there" answers count as success.
  Status Sacctmgr(const std::vector<std::string>& args);
  // After a daemon restart, the associations hpcplane made before (its ledger holds their
  // users' levels) are confirmed with one listing instead of an `add` each: every sacctmgr call
  // costs about a third of a second of a cluster's bring-up.
  void AdoptExisting(const std::string& cluster, const std::vector<Association>& want, OwnershipLedger* ledger);

  std::string Pod() const { return command_pod_ ? command_pod_->Get() : pod_; }

  runtime::PodRuntime* rt_;
  std::string pod_;
  const slurm::CommandPod* command_pod_ = nullptr;
  bool cluster_added_ = false;
  std::set<std::string> accounts_;
  std::set<Association> done_;
};

}  // namespace hpc::op
