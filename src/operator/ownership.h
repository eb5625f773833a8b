// What hpcplane has made in Slurm, and so may change or delete (DESIGN, Ownership): the
// partitions it created for its nodesets, and the administrator levels it set in slurmdbd; and
// the volumes it made for workspaces' project datasets, which outlive their workspaces.
// Kept in a file beside the cluster's specs so ownership survives daemon restarts; it is never
// inferred from "not in my list", which would take an admin's partition for a stale one of ours.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "common/result.h"

namespace hpc::op {

// Where the ledger's record is kept: a file (one machine), or any text the caller reads and
// writes (on Kubernetes a ConfigMap the SlurmCluster owns, which outlives the operator pod and
// is what the next leader reads).
struct LedgerStorage {
  std::string name;                                          // for messages
  std::function<Result<std::optional<std::string>>()> read;  // nullopt: nothing recorded yet
  std::function<Status(const std::string&)> write;
  static LedgerStorage File(const std::string& path);
};

class OwnershipLedger {
 public:
  // Reads the record (none yet: nothing owned). An unreadable or malformed one is an error: with
  // ownership unknown nothing may be deleted (fail closed).
  static Result<OwnershipLedger> Open(LedgerStorage storage);
  static Result<OwnershipLedger> Open(const std::string& path) { return Open(LedgerStorage::File(path)); }

  const std::set<std::string>& partitions() const { return partitions_; }
  // Recorded before the partition is created, so a crash in between never leaves one of ours
  // unrecorded; forgotten once it is deleted.
  Status AddPartitions(const std::set<std::string>& names);
  Status ForgetPartition(const std::string& name);

  // Project datasets whose volume hpcplane made for a workspace (name -> group): kept after the
  // workspace stops, each still follows the cluster's storage policy (retainOnDelete).
  const std::map<std::string, int64_t>& datasets() const { return datasets_; }
  Status AddDataset(const std::string& name, int64_t gid);

  // The Slurm administrator level hpcplane last set for a user ("" when it never set one).
  std::string AdminLevel(const std::string& user) const;
  Status SetAdminLevel(const std::string& user, const std::string& level);

 private:
  explicit OwnershipLedger(LedgerStorage storage) : storage_(std::move(storage)) {}
  Status Save() const;

  LedgerStorage storage_;
  std::set<std::string> partitions_;
  std::map<std::string, std::string> admin_levels_;
  std::map<std::string, int64_t> datasets_;
};

}  // namespace hpc::op
