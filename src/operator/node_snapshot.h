// Slurm's node list read once per pass, before the pass lists jobs, and served to everything in
// the pass that asks for nodes. Between the two reads a job can only move from pending to
// running, so a pass may count a starting job's workers as idle, never the job both as pending
// and its workers as busy: that double count once scaled a nodeset to four workers for one -N2
// job. It also makes one node query per pass instead of one per nodeset.
#pragma once

#include "slurm/slurm_client.h"

namespace hpc::op {

class NodeSnapshot : public slurm::SlurmReader {
 public:
  explicit NodeSnapshot(slurm::SlurmReader* live) : live_(live), nodes_(live->Nodes()) {}

  Result<std::string> Ping() override { return live_->Ping(); }
  Result<std::vector<slurm::SlurmNode>> Nodes() override { return nodes_; }
  Result<std::vector<slurm::SlurmJob>> Jobs() override { return live_->Jobs(); }
  Result<std::vector<slurm::SlurmPartition>> Partitions() override { return live_->Partitions(); }

 private:
  slurm::SlurmReader* live_;
  Result<std::vector<slurm::SlurmNode>> nodes_;
};

}  // namespace hpc::op
