// The scaling plan for one nodeset: which workers to create, resume, drain and remove to reach
// the desired count without ever touching a running job. Pure, so every rule is unit-tested.
//
// Rules:
//  - Only registered, undrained, non-admin workers are drain candidates; idle ones go first,
//    then the highest ordinals. A drain carries the "hpcplane:" prefix.
//  - A worker is removed only when Slurm shows it drained by hpcplane and not busy.
//  - Drains without the prefix belong to admins: never resumed, never removed.
//  - Health check drains are not capacity (a worker is added in their place) and are left to
//    the health policy: never resumed, drained or removed here.
//  - Without a view of Slurm nothing is drained or removed (fail closed).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace hpc::op {

struct WorkerView {
  std::string pod;
  int ordinal = 0;
  bool registered = false;   // Slurm knows the node
  bool busy = false;         // has allocated CPUs or is completing a job
  bool drain_ours = false;   // drained with the hpcplane: prefix
  bool drain_admin = false;  // drained by someone else
  int64_t idle_seconds = 0;  // how long Slurm has seen it without work
  // Drained by a health check (operator/health_policy.h decides its fate): no capacity, so the
  // scaler adds a worker in its place, but never resumes or removes it.
  bool drain_health = false;
  // On an image its nodeset no longer runs (a rolling upgrade): no capacity, never resumed or
  // drained for a scale-down; removed, as any worker, once Slurm shows hpcplane's drain and no job.
  bool outdated = false;
};

struct ScaleOptions {
  bool slurm_visible = true;
  // Autoscaled nodesets only drain workers idle at least this long, and never busy ones;
  // nullopt (manual scaling) drains whatever the count requires, idle ones first.
  std::optional<int64_t> idle_timeout;
  int max_create = -1;  // rate limits per decision; -1: unlimited
  int max_drain = -1;
  // Ordinals of workers removed earlier in this pass (health replacements). A new worker does not
  // take their name until a later pass: a pod's deletion may still be under way, and a fresh node
  // under the name just replaced would read as the old one coming back.
  std::set<int> retired_ordinals;
};

struct ScalePlan {
  std::vector<int> create;          // ordinals of new workers
  std::vector<std::string> resume;  // our drains to undo, scale-up reuses them
  std::vector<std::string> drain;
  std::vector<std::string> remove;  // delete pod, then delete the node from Slurm
  std::string decision;             // human-readable summary; empty when nothing changes
};

ScalePlan PlanScale(const std::vector<WorkerView>& workers, int desired, const ScaleOptions& opts);

}  // namespace hpc::op
