// How the agent reads its data plane's live view (live_cluster.h) from Slurm: the node list as
// `scontrol show nodes --json` prints it (Slurm 22.05, whose scontrol has no --json: `sinfo
// --json`), the documents slurmrestd serves, parsed by slurm::RestClient for every supported
// release; partitions and the queue from sinfo's and squeue's text formats, which every release
// prints alike and which stay small and cheap at 10,000 jobs where the JSON does not.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "messages/live_cluster.h"
#include "slurm/slurm_client.h"

namespace hpc::cp {

// sinfo's arguments for ParseLivePartitions: each partition and its availability.
std::vector<std::string> LivePartitionsCommand();
// "name|up" lines (a partition may come on several lines, one per node state) to partitions,
// each once, their state upper case (UP, DOWN, DRAIN, INACT).
Result<std::vector<slurm::SlurmPartition>> ParseLivePartitions(const std::string& output);

// squeue's arguments for LiveQueue: queued and running jobs, one '|'-separated line each, times
// in unix seconds (run under SLURM_TIME_FORMAT=%s).
std::vector<std::string> LiveQueueCommand();

// The lines of LiveQueueCommand's output: running jobs first, then pending ones by priority
// (highest first) and submit time, at most kMaxQueuedJobs; `total` gets how many there were.
Result<std::vector<LiveJob>> ParseLiveQueue(const std::string& output, int64_t* total);

// `scontrol ping`'s lines ("Slurmctld(primary) at c1-controller is UP") to the controllers in
// their order; `serving` names the one in control (the cluster's status: ping cannot tell). Lines
// of another shape (the root-only banner of a controller down) are not controllers.
std::vector<LiveController> ParseControllerPing(const std::string& output, const std::string& serving);

// The view from Slurm's nodes and partitions, the queue and the operator's nodesets; a node
// belongs to the nodeset whose name is one of its features.
LiveCluster AssembleLiveCluster(const std::vector<slurm::SlurmNode>& nodes,
                                const std::vector<slurm::SlurmPartition>& partitions, std::vector<LiveJob> queue,
                                int64_t queue_total, std::vector<LiveNodeSet> nodesets, int64_t now);

}  // namespace hpc::cp
