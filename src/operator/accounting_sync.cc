#include "operator/accounting_sync.h"

#include <algorithm>
#include <sstream>

#include <spdlog/spdlog.h>

namespace hpc::op {

Status AccountingSync::Sacctmgr(const std::vector<std::string>& args) {
  runtime::ExecOptions o;
  o.user = "slurm";
  o.argv = {"sacctmgr", "-i"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.timeout = std::chrono::milliseconds(20000);
  ASSIGN_OR_RETURN(ProcessResult r, rt_->Exec(Pod(), o));
  std::string text = r.out + r.err;
  if (r.ok()) return Status::Ok();
  // sacctmgr exits non-zero when there is nothing to do.
  for (const char* benign : {"already exists", "Nothing new added", "Nothing modified"}) {
    if (text.find(benign) != std::string::npos) return Status::Ok();
  }
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return Status::Errorf("sacctmgr {} failed (exit {}): {}", JoinArgs(args), r.exit_code, text);
}

void AccountingSync::AdoptExisting(const std::string& cluster, const std::vector<Association>& want,
                                   OwnershipLedger* ledger) {
  auto level = [](const Association& a) { return std::string(a.admin ? "Administrator" : "None"); };
  const bool all_known = !want.empty() && std::all_of(want.begin(), want.end(), [&](const Association& a) {
    return ledger->AdminLevel(a.user) == level(a);
  });
  if (!all_known) return;
  runtime::ExecOptions o;
  o.user = "slurm";
  o.argv = {"sacctmgr", "-n", "-P", "show", "associations", "where", "cluster=" + cluster, "format=account,user"};
  o.timeout = std::chrono::milliseconds(20000);
  auto r = rt_->Exec(Pod(), o);
  if (!r.ok() || !r->ok()) return;                        // the adds below find out
  std::set<std::pair<std::string, std::string>> present;  // (account, user); user empty: the account
  std::istringstream lines(r->out);
  for (std::string line; std::getline(lines, line);) {
    auto bar = line.find('|');
    if (bar == std::string::npos) continue;
    present.emplace(line.substr(0, bar), line.substr(bar + 1));
  }
  if (present.empty()) return;  // the cluster has no association yet
  cluster_added_ = true;
  for (const auto& [account, user] : present) {
    if (user.empty()) accounts_.insert(account);
  }
  for (const auto& a : want) {
    if (present.count({a.account, a.user})) done_.insert(a);
  }
  spdlog::info("accounting: {} of {} association(s) already in slurmdbd", done_.size(), want.size());
}

Status AccountingSync::Sync(const std::string& cluster, const std::vector<Association>& want, OwnershipLedger* ledger) {
  if (!cluster_added_) AdoptExisting(cluster, want, ledger);
  if (!cluster_added_) {
    RETURN_IF_ERROR(Sacctmgr({"add", "cluster", cluster}));
    cluster_added_ = true;
  }
  for (const auto& a : want) {
    if (done_.count(a)) continue;
    if (!accounts_.count(a.account)) {
      RETURN_IF_ERROR(Sacctmgr({"add", "account", a.account, "Cluster=" + cluster,
                                "Description=hpcplane project " + a.account, "Organization=hpcplane"}));
      accounts_.insert(a.account);
    }
    // `add` gives a new user this level and leaves an existing user's level alone.
    std::string level = a.admin ? "Administrator" : "None";
    RETURN_IF_ERROR(
        Sacctmgr({"add", "user", a.user, "Account=" + a.account, "Cluster=" + cluster, "AdminLevel=" + level}));
    std::string ours = ledger->AdminLevel(a.user);
    // A role change must reach an existing user too, but only a level hpcplane set is taken back.
    bool grant = a.admin && ours != "Administrator";
    bool revoke = !a.admin && ours == "Administrator";
    if (grant || revoke) {
      RETURN_IF_ERROR(Sacctmgr({"modify", "user", "where", "name=" + a.user, "set", "AdminLevel=" + level}));
    }
    if (grant || revoke || ours.empty()) RETURN_IF_ERROR(ledger->SetAdminLevel(a.user, level));
    spdlog::info("accounting: user {} in account {} (admin level {})", a.user, a.account, level);
    // A user's earlier entry with another level is superseded.
    std::erase_if(done_, [&](const Association& d) { return d.user == a.user && d.admin != a.admin; });
    done_.insert(a);
  }
  return Status::Ok();
}

bool AccountingSync::Synced(const std::string& user) const {
  for (const auto& d : done_) {
    if (d.user == user) return true;
  }
  return false;
}

}  // namespace hpc::op
