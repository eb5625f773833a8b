// A data plane's Slurm as it is now: its nodes, partitions, queue and nodesets, collected by
// the data plane's agent every few seconds and kept by the control plane (the server never
// talks to Slurm). The JSON form is what the agent posts and what the console reads; parsing it
// checks every field, since it crosses the network.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "common/result.h"

namespace hpc::cp {

// One GPU of a worker as its last health check saw it; -1 where nvidia-smi had no value.
struct LiveGpu {
  std::string bus_id;
  int utilization_percent = -1;
  int64_t memory_used_mib = -1;
  int64_t memory_total_mib = -1;
  int temperature_celsius = -1;
};

struct LiveNode {
  std::string name;
  std::string nodeset;             // the nodeset (or workspace) whose worker it is; empty: none of ours
  std::string state;               // Slurm's base state, lowercase: idle, mixed, allocated, down, ...
  std::vector<std::string> flags;  // DRAIN, COMPLETING, NOT_RESPONDING, ...
  std::string reason;
  int cpus = 0;
  int cpus_allocated = 0;
  int64_t memory_mib = 0;
  int64_t memory_allocated_mib = 0;
  std::vector<std::string> partitions;
  std::vector<LiveGpu> gpus;  // from the worker's last health report (workers with nvidia-smi)
};

struct LivePartition {
  std::string name;
  std::string state;  // UP, DOWN, DRAIN, INACTIVE
  int nodes = 0;
  int cpus = 0;
};

// A queued or running job.
struct LiveJob {
  int64_t job_id = 0;
  std::string name, user, account, partition;
  std::string state;   // PENDING, RUNNING, ...
  std::string reason;  // why it waits (Resources, Priority, Dependency, ...); None when running
  int nodes = 0;
  int cpus = 0;
  int64_t submit_time = 0;
  int64_t start_time = 0;  // expected start of a pending job, when Slurm has one
};

struct LiveNodeSet {
  std::string name;
  int desired = 0;
  int current = 0;  // worker pods that exist
  int busy = 0;
  int idle = 0;
  int draining = 0;
};

// A slurmctld of the cluster, in slurm.conf's order (the primary first).
struct LiveController {
  std::string name;
  std::string role;         // primary, backup (Slurm's names in `scontrol ping`)
  bool responding = false;  // answered Slurm's ping
  bool serving = false;     // the one in control, as the cluster's status says
};

struct LiveCluster {
  int64_t collected_at = 0;  // unix seconds, by the agent's clock
  std::vector<LiveController> controllers;
  std::vector<LiveNode> nodes;
  std::vector<LivePartition> partitions;
  std::vector<LiveJob> queue;  // at most kMaxQueuedJobs, pending jobs by priority after running ones
  int64_t queue_total = 0;     // the whole queue's length
  std::vector<LiveNodeSet> nodesets;
};

// What one snapshot may hold: bounded so that a report stays well under the server's body limit.
inline constexpr size_t kMaxLiveNodes = 5000;
inline constexpr size_t kMaxLiveNodeGpus = 16;  // a node's GPUs (the largest machines have 8-16)
inline constexpr size_t kMaxQueuedJobs = 10000;
inline constexpr size_t kMaxLiveNodeSets = 1000;
inline constexpr size_t kMaxLiveControllers = 8;

// What an agent posts at most: under the server's default body limit (4 MiB), whatever the
// names in the queue.
inline constexpr size_t kMaxLiveViewBytes = 3 << 20;

nlohmann::json ToJson(const LiveCluster& c);
// The view as JSON text of at most `max_bytes`: when it would be longer, the queue is cut (its
// tail, the lowest priorities first) until it fits, then the nodes' GPU numbers go; queue_total
// still counts every job. Bytes that are not UTF-8 (a job name is the user's) are replaced.
std::string EncodeLiveCluster(LiveCluster c, size_t max_bytes = kMaxLiveViewBytes);
// Every field checked (types, names, bounds); the error names the field, e.g. "nodes[3].cpus".
Result<LiveCluster> LiveClusterFromJson(const nlohmann::json& j);

}  // namespace hpc::cp
