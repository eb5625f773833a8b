// Keeps Slurm's live partitions equal to the nodesets' without `scontrol reconfigure`: creates
// missing partitions, puts each registered worker into its nodeset's partition, applies state
// changes (a stopping workspace's DRAIN), re-resolves AllowGroups when users changed, and
// deletes partitions whose nodeset is gone. slurm.conf holds the same partitions, so a restarted
// slurmctld comes back to the same picture.
//
// Ownership: only partitions in the ownership ledger are ever deleted. A nodeset's partition is
// recorded there before it is created (and adopted when slurmctld already has it from
// slurm.conf); partitions from spec.scheduling.extraConfig or made by an admin at run time are
// never in it, so they are left alone whatever their name.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "api/types.h"
#include "common/result.h"
#include "operator/ownership.h"
#include "slurm/slurm_client.h"

namespace hpc::op {

// The scontrol actions that bring `actual` to what `nodesets` describe, deleting only partitions
// named in `owned`. Pure, for tests. `cluster_sets_default_memory`: see slurm::PartitionOptions.
struct PartitionAction {
  enum Kind { kCreate, kUpdate, kDelete } kind;
  std::string partition;
  std::vector<std::string> options;
  bool operator==(const PartitionAction&) const = default;
};
std::vector<PartitionAction> PlanPartitions(const std::vector<api::NodeSet>& nodesets,
                                            const std::vector<slurm::SlurmPartition>& actual,
                                            const std::vector<slurm::SlurmNode>& nodes, bool users_changed,
                                            const std::set<std::string>& owned,
                                            bool cluster_sets_default_memory = false);

Status SyncPartitions(const std::vector<api::NodeSet>& nodesets, slurm::SlurmReader* reader,
                      slurm::SlurmControl* control, bool users_changed, OwnershipLedger* ledger,
                      bool cluster_sets_default_memory = false);

}  // namespace hpc::op
