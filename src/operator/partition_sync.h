// Keeps Slurm's live partitions equal to the nodesets' without `scontrol reconfigure`: creates
// missing partitions, puts each registered worker into its nodeset's partition, applies state
// changes (a stopping workspace's DRAIN), re-resolves AllowGroups when users changed, and
// deletes partitions whose nodeset is gone. slurm.conf holds the same partitions, so a restarted
// slurmctld comes back to the same picture.
#pragma once

#include <vector>

#include "api/types.h"
#include "common/result.h"
#include "slurm/slurm_client.h"

namespace hpc::op {

// The scontrol actions that bring `actual` to what `nodesets` describe. Pure, for tests.
struct PartitionAction {
  enum Kind { kCreate, kUpdate, kDelete } kind;
  std::string partition;
  std::vector<std::string> options;
  bool operator==(const PartitionAction&) const = default;
};
std::vector<PartitionAction> PlanPartitions(const std::vector<api::NodeSet>& nodesets,
                                            const std::vector<slurm::SlurmPartition>& actual,
                                            const std::vector<slurm::SlurmNode>& nodes, bool users_changed);

Status SyncPartitions(const std::vector<api::NodeSet>& nodesets, slurm::SlurmReader* reader,
                      slurm::SlurmControl* control, bool users_changed);

}  // namespace hpc::op
