// What the operator needs to know of and do to Slurm, behind interfaces so reconcilers can be
// tested against fakes. Reads go through slurmrestd (JWT), except the operator's per-pass job
// list (squeue in the controller pod, slurm/squeue_jobs.h: slurmrestd 22.05 keeps the
// memory of every listing); actions REST 0.0.38 lacks (drain, resume, delete node,
// reconfigure) go through scontrol in the controller pod.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::slurm {

struct SlurmNode {
  std::string name;
  std::string state;            // base state, lowercase: idle, allocated, mixed, down, unknown, ...
  std::set<std::string> flags;  // upper case: DRAIN, COMPLETING, DYNAMIC_NORM, NOT_RESPONDING, ...
  std::string reason;
  std::string reason_set_by;      // the user who set the reason ("slurm": slurmctld itself)
  int64_t reason_changed_at = 0;  // unix seconds the reason was last set or cleared
  std::string extra;              // the node's Extra field: the health check's report
  std::set<std::string> features;
  std::set<std::string> partitions;
  int cpus = 0;
  int alloc_cpus = 0;
  int64_t memory_mib = 0;  // RealMemory
  int64_t alloc_memory_mib = 0;
  int64_t last_busy = 0;  // unix seconds the node last had work (or registered)

  bool Drain() const { return flags.count("DRAIN") > 0; }
  // Running or finishing work: such a node must not be removed.
  bool Busy() const {
    return alloc_cpus > 0 || state == "allocated" || state == "mixed" || state == "completing" ||
           flags.count("COMPLETING") > 0;
  }
  // Slurm 22.05 leaves a dynamic node ALLOCATED with no CPU allocated when `scontrol
  // reconfigure` ran during its job: no job holds it, yet it can be neither drained to idle
  // nor deleted. Every job allocates at least one CPU on each of its nodes, so this is exact.
  bool StuckAllocated() const {
    return (state == "allocated" || state == "mixed") && alloc_cpus == 0 && !flags.count("COMPLETING");
  }
  // Slurm gave up on the node's slurmd: set DOWN after SlurmdTimeout without an answer, its jobs
  // ended or requeued as their requeue settings say. Only slurmctld sets NOT_RESPONDING.
  bool Lost() const { return state == "down" && flags.count("NOT_RESPONDING") > 0; }
  bool Usable() const {
    return !(state == "down" || state == "unknown" || state == "future" || flags.count("NOT_RESPONDING"));
  }
};

struct SlurmPartition {
  std::string name;
  std::string state;  // UP, DRAIN, DOWN, INACTIVE
};

struct SlurmJob {
  int64_t job_id = 0;
  std::string user;
  // PENDING, RUNNING, ...; a flag where Slurm shows one in place of the base state (COMPLETING,
  // REQUEUED: squeue's listing; an ended job still COMPLETING is not Finished()).
  std::string state;
  // Allocated but its nodes still booting (Slurm's power saving): 24.11 on list such a job as
  // RUNNING with this flag, before any of it runs.
  bool configuring = false;
  std::string reason;     // state_reason
  std::string partition;  // comma-separated when several were requested
  std::string nodes;
  int64_t submit_time = 0;
  int64_t start_time = 0;
  // The request, for packing pending jobs onto nodes.
  int node_count = 1;
  int cpus = 1;
  int min_cpus_per_node = 1;
  int64_t memory_per_node = 0;  // MiB; 0 when not requested per node
  int64_t memory_per_cpu = 0;   // MiB
  int gpus_per_node = 0;
  bool exclusive = false;
  std::string array_task_string;  // pending tasks of an array, e.g. "1-5%2"
  int array_max_tasks = 0;
  int restart_count = 0;
  // What the job waits on besides capacity: its dependencies as Slurm shows them (e.g.
  // "afterok:12(unfulfilled)"), and its priority (0: held). Slurm's reason alone does not tell:
  // a job waiting on a dependency in a partition without nodes is shown as PartitionConfig.
  std::string dependency;
  int64_t priority = -1;  // -1: not known
  bool WaitsOnDependency() const {
    return dependency.find("(unfulfilled)") != std::string::npos || dependency.find("(failed)") != std::string::npos;
  }
  bool Held() const { return priority == 0; }

  // Ended for good: what squeue still lists for MinJobAge is history, not work.
  bool Finished() const {
    static const std::set<std::string> ended = {"COMPLETED",     "CANCELLED", "FAILED",      "TIMEOUT",
                                                "NODE_FAIL",     "PREEMPTED", "BOOT_FAIL",   "DEADLINE",
                                                "OUT_OF_MEMORY", "REVOKED",   "SPECIAL_EXIT"};
    return ended.count(state) > 0;
  }
};

class SlurmReader {
 public:
  virtual ~SlurmReader() = default;
  /** Succeeds when slurmrestd answers and slurmctld behind it responds; returns Slurm's release. */
  virtual Result<std::string> Ping() = 0;
  virtual Result<std::vector<SlurmNode>> Nodes() = 0;
  virtual Result<std::vector<SlurmJob>> Jobs() = 0;
  virtual Result<std::vector<SlurmPartition>> Partitions() = 0;
};

class SlurmControl {
 public:
  virtual ~SlurmControl() = default;
  virtual Status DrainNode(const std::string& node, const std::string& reason) = 0;
  virtual Status ResumeNode(const std::string& node) = 0;
  virtual Status DeleteNode(const std::string& node) = 0;
  /** Makes slurmctld reread slurm.conf (new nodesets and partitions). */
  virtual Status Reconfigure() = 0;
  /** Sets a node DOWN (with `reason`) and RESUMEs it: Slurm ends (and requeues) what it still
   * counts as running there, and clears a stale allocation of a node that runs nothing. */
  virtual Status ResetNode(const std::string& node, const std::string& reason) = 0;
  /** Partitions are managed in place (create, update, delete) rather than by `scontrol
   * reconfigure`, which Slurm 22.05 handles badly for dynamic nodes with jobs. `options` are
   * PartitionName options such as Nodes=, State=, AllowGroups=. */
  virtual Status CreatePartition(const std::string& partition, const std::vector<std::string>& options) = 0;
  virtual Status UpdatePartition(const std::string& partition, const std::vector<std::string>& options) = 0;
  virtual Status DeletePartition(const std::string& partition) = 0;
  /** Cancels every job, queued or running, in a partition. */
  virtual Status CancelPartitionJobs(const std::string& partition) = 0;
  /** Ends the jobs running on a node: requeued (batch jobs go back to the queue; Slurm refuses
   * to requeue others, which keep running) or cancelled. */
  virtual Status EndJobsOnNode(const std::string& node, bool requeue) = 0;
};

// Prefix of every drain reason hpcplane sets; drains without it belong to admins.
inline constexpr const char* kDrainReasonPrefix = "hpcplane:";

// Whether slurmctld itself drained the node for a failure on it (a job it could not launch or
// end there: "Duplicate jobid", "Kill task failed", "batch job complete failure", a prolog or
// epilog error). Such a worker is broken as far as Slurm is concerned and stays drained until
// someone acts; an admin's drain (set by another user, or with another reason) is not this.
inline bool IsSlurmFaultDrain(const SlurmNode& node) {
  static const std::set<std::string> kReasons = {"Duplicate jobid", "Kill task failed", "batch job complete failure",
                                                 "Prolog error", "Epilog error"};
  return node.Drain() && node.reason_set_by == "slurm" && kReasons.count(node.reason) > 0;
}

}  // namespace hpc::slurm
