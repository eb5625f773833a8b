#include "operator/ownership.h"

#include <nlohmann/json.hpp>

#include "common/files.h"

namespace hpc::op {
using nlohmann::json;

LedgerStorage LedgerStorage::File(const std::string& path) {
  return {path,
          [path]() -> Result<std::optional<std::string>> {
            if (!files::Exists(path)) return std::optional<std::string>();
            ASSIGN_OR_RETURN(std::string text, files::Read(path));
            return std::optional<std::string>(std::move(text));
          },
          [path](const std::string& text) { return files::WriteAtomic(path, text, 0600); }};
}

Result<OwnershipLedger> OwnershipLedger::Open(LedgerStorage storage) {
  OwnershipLedger ledger(std::move(storage));
  ASSIGN_OR_RETURN(std::optional<std::string> text, ledger.storage_.read());
  if (!text) return ledger;
  json j = json::parse(*text, nullptr, false);
  bool valid = j.is_object();
  const json partitions = valid ? j.value("partitions", json::array()) : json();
  const json levels = valid ? j.value("adminLevels", json::object()) : json();
  const json datasets = valid ? j.value("datasets", json::object()) : json();
  valid = valid && partitions.is_array() && levels.is_object() && datasets.is_object();
  if (valid) {
    for (const auto& p : partitions) valid = valid && p.is_string();
    for (const auto& l : levels) valid = valid && l.is_string();
    for (const auto& d : datasets) valid = valid && d.is_number_integer();
  }
  if (!valid) {
    return Status::Errorf(
        "{}: not a valid ownership record; hpcplane changes no partition or admin level until it "
        "is repaired or removed",
        ledger.storage_.name);
  }
  ledger.partitions_ = partitions.get<std::set<std::string>>();
  ledger.admin_levels_ = levels.get<std::map<std::string, std::string>>();
  ledger.datasets_ = datasets.get<std::map<std::string, int64_t>>();
  return ledger;
}

Status OwnershipLedger::Save() const {
  json j = {{"partitions", partitions_}, {"adminLevels", admin_levels_}};
  if (!datasets_.empty()) j["datasets"] = datasets_;
  return storage_.write(j.dump(2) + "\n");
}

Status OwnershipLedger::AddPartitions(const std::set<std::string>& names) {
  size_t before = partitions_.size();
  partitions_.insert(names.begin(), names.end());
  return partitions_.size() == before ? Status::Ok() : Save();
}

Status OwnershipLedger::ForgetPartition(const std::string& name) {
  return partitions_.erase(name) ? Save() : Status::Ok();
}

Status OwnershipLedger::AddDataset(const std::string& name, int64_t gid) {
  auto [it, added] = datasets_.try_emplace(name, gid);
  if (!added && it->second == gid) return Status::Ok();
  it->second = gid;
  return Save();
}

std::string OwnershipLedger::AdminLevel(const std::string& user) const {
  auto it = admin_levels_.find(user);
  return it == admin_levels_.end() ? "" : it->second;
}

Status OwnershipLedger::SetAdminLevel(const std::string& user, const std::string& level) {
  if (AdminLevel(user) == level) return Status::Ok();
  admin_levels_[user] = level;
  return Save();
}

}  // namespace hpc::op
