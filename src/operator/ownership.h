// What hpcplane has made in Slurm, and so may change or delete (DESIGN, Ownership): the
// partitions it created for its nodesets, and the administrator levels it set in slurmdbd.
// Kept in a file beside the cluster's specs so ownership survives daemon restarts; it is never
// inferred from "not in my list", which would take an admin's partition for a stale one of ours.
#pragma once

#include <map>
#include <set>
#include <string>

#include "common/result.h"

namespace hpc::op {

class OwnershipLedger {
 public:
  // Reads the file at `path` (none yet: nothing owned). An unreadable or malformed file is an
  // error: with ownership unknown nothing may be deleted (fail closed).
  static Result<OwnershipLedger> Open(std::string path);

  const std::set<std::string>& partitions() const { return partitions_; }
  // Recorded before the partition is created, so a crash in between never leaves one of ours
  // unrecorded; forgotten once it is deleted.
  Status AddPartitions(const std::set<std::string>& names);
  Status ForgetPartition(const std::string& name);

  // The Slurm administrator level hpcplane last set for a user ("" when it never set one).
  std::string AdminLevel(const std::string& user) const;
  Status SetAdminLevel(const std::string& user, const std::string& level);

 private:
  explicit OwnershipLedger(std::string path) : path_(std::move(path)) {}
  Status Save() const;

  std::string path_;
  std::set<std::string> partitions_;
  std::map<std::string, std::string> admin_levels_;
};

}  // namespace hpc::op
