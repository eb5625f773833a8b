// Demand: how many workers a nodeset needs for the jobs Slurm has pending on its partition.
// Pure and allocation-light, so one decision over 100,000 pending jobs stays cheap.
//
// Only jobs that more nodes would let run are counted: pending for capacity (None, Resources,
// Priority, PartitionConfig, PartitionNodeLimit, ReqNodeNotAvail, NodeDown). Held jobs, jobs
// waiting on dependencies, begin times, reservations, licenses, QOS or association limits are
// not. Counted jobs are packed first-fit-decreasing onto nodes of the nodeset's shape; arrays
// count their pending tasks (at most their %limit), --exclusive takes whole nodes, and a job
// that can never fit the shape or the nodeset's maximum is reported instead of counted.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "slurm/slurm_client.h"

namespace hpc::op {

struct NodeShape {
  int cpus = 1;
  int64_t memory_mib = 1024;
  int gpus = 0;
};

struct UnfitJob {
  int64_t job_id = 0;
  std::string why;
};

struct Demand {
  int nodes_needed = 0;  // new nodes the counted jobs would fill, capped at the search limit
  int jobs_counted = 0;  // pending jobs (array tasks count one each) that need capacity
  int jobs_ignored = 0;  // pending for other reasons (held, dependency, ...)
  std::vector<UnfitJob> unfit;
};

// Whether a pending job's reason means it waits for capacity more nodes would add.
bool IsCapacityReason(const std::string& reason);

// Number of tasks an array's pending expression stands for: "1-5%2" -> 5, "3,7-9" -> 4.
int CountArrayTasks(const std::string& expr);

// Pending jobs by the partitions they name, built once per decision so each nodeset looks
// only at its own jobs (a job naming several partitions appears under each).
using PendingByPartition = std::unordered_map<std::string, std::vector<const slurm::SlurmJob*>>;
PendingByPartition GroupPending(const std::vector<slurm::SlurmJob>& jobs);

// Demand of one partition's pending jobs. Packing stops once `max_new_nodes` nodes are
// needed, since more cannot be added anyway.
Demand ComputeDemand(const std::vector<const slurm::SlurmJob*>& jobs, const NodeShape& shape, int max_nodes,
                     int max_new_nodes);
// Convenience for tests: the jobs of `partition` out of a full listing.
Demand ComputeDemand(const std::vector<slurm::SlurmJob>& jobs, const std::string& partition, const NodeShape& shape,
                     int max_nodes, int max_new_nodes);

// clamp(busy + needed, min, max): the DESIGN's desired worker count.
int DesiredWorkers(int busy, const Demand& d, int min, int max);

}  // namespace hpc::op
