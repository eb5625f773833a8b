// How the agent reads its data plane's live view (live_cluster.h) from Slurm: node and
// partition lists as `scontrol show ... --json` prints them (the documents slurmrestd serves,
// parsed by slurm::RestClient for every supported release), and the queue from squeue's text
// format, which stays small and cheap at 10,000 jobs where its JSON does not.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "controlplane/live_cluster.h"
#include "slurm/slurm_client.h"

namespace hpc::cp {

// squeue's arguments for LiveQueue: queued and running jobs, one '|'-separated line each, times
// in unix seconds (run under SLURM_TIME_FORMAT=%s).
std::vector<std::string> LiveQueueCommand();

// The lines of LiveQueueCommand's output: running jobs first, then pending ones by priority
// (highest first) and submit time, at most kMaxQueuedJobs; `total` gets how many there were.
Result<std::vector<LiveJob>> ParseLiveQueue(const std::string& output, int64_t* total);

// The view from Slurm's nodes and partitions, the queue and the operator's nodesets; a node
// belongs to the nodeset whose name is one of its features.
LiveCluster AssembleLiveCluster(const std::vector<slurm::SlurmNode>& nodes,
                                const std::vector<slurm::SlurmPartition>& partitions, std::vector<LiveJob> queue,
                                int64_t queue_total, std::vector<LiveNodeSet> nodesets, int64_t now);

}  // namespace hpc::cp
