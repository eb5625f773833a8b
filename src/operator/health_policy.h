// What to do about workers' health reports (slurm/health_check.h), for one nodeset. Pure, so
// every rule is unit-tested.
//
// Rules:
//  - A worker whose latest report fails, newer than its last drain change, is drained with
//    "hpcplane:health:<check>: <detail>", while fewer than maxUnhealthy workers of the nodeset
//    are drained by health checks; beyond that it is held back and the check is suspect.
//  - A worker whose last report (or its pod's start, if later) is older than stale_after, while
//    Slurm still hears from it and another worker of the nodeset reported within stale_after,
//    is drained the same way, check "stale": a run of the program that never finishes (a check
//    stuck on a hung mount or device, which no timeout can kill) holds the lock every later run
//    needs, and its last report, often a pass, would otherwise stand for ever. The fresh peer
//    keeps a cluster-wide silence (slurmctld down, a clock step, an interval slurmctld has not
//    taken yet) from draining anyone; a nodeset of one worker is never drained as stale.
//  - A worker drained by a health check whose report passes again, written after the drain,
//    is resumed. No other drain is ever resumed here: an admin's or the scaler's stay theirs.
//  - A worker drained by a health check for replaceAfter or longer and running nothing is
//    replaced (its pod and node are removed; the scaler brings the capacity back), at most the
//    remaining replacement budget; except for a GPU fault (the `gpu` check): the fault stays
//    with the GPU, and a replacement would get the same GPU back (locally, the host's claims
//    free it for the next pod). The worker stays drained, holding the GPU out of every other
//    worker's reach, until its check passes again (a GPU reset) or an admin deletes it; the
//    scaler brings the capacity back on other GPUs meanwhile.
//  - A worker slurmctld drained for a failure of its own on it (slurm::IsSlurmFaultDrain) is
//    unhealthy too, and replaced the same way; it is never resumed here (a fresh worker is the
//    cure), nor counted against maxUnhealthy, which bounds what the checks drain.
//  - Health checks turned off: their drains are resumed, since no check will ever clear them;
//    nothing is replaced.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/types.h"
#include "slurm/health_check.h"

namespace hpc::op {

struct HealthWorker {
  std::string pod;
  bool busy = false;
  bool drained = false;            // by anyone
  bool drained_by_health = false;  // reason has the kHealthDrainPrefix
  bool drained_by_slurm = false;   // slurmctld drained it for a failure on it
  bool gpu_fault = false;          // drained by the `gpu` check: kept, never replaced
  bool responding = true;          // Slurm hears from its slurmd (not DOWN, not NOT_RESPONDING)
  int64_t started_at = 0;          // its pod's current run (unix seconds)
  int64_t reason_changed_at = 0;
  slurm::HealthReport report;
};

struct HealthOptions {
  bool enabled = true;
  int max_unhealthy = 1;
  int64_t replace_after_seconds = 600;
  int replacements_left = 1;
  int64_t now = 0;
  int64_t stale_after_seconds = 0;  // a report older than this is a failure; 0: never
};

// How old a report may get before the worker counts as failing: three intervals, every check of
// a run timing out (ten of them), and the clock skew the checks allow. 220 s at the defaults.
int64_t StaleReportAfter(const api::HealthChecksSpec& h);
// StaleReportAfter where hpcplane runs the checks every interval; 0 (never stale) where the admin
// scheduled them (slurm::RunsPeriodicHealthChecks).
int64_t StaleReportAfter(const api::SlurmCluster& c);

struct HealthDrain {
  std::string pod;
  std::string reason;
};

struct HealthPlan {
  std::vector<HealthDrain> drain;
  std::vector<std::string> resume;
  std::vector<std::string> replace;
  std::vector<std::string> held_back;  // failing, not drained: the cap was reached
  std::string held_back_detail;        // the first held-back worker's failure
  int unhealthy = 0;  // drained by health checks or by Slurm for a fault, and still there after the plan
};

HealthPlan PlanHealth(const std::vector<HealthWorker>& workers, const HealthOptions& opts);

// Whether a drain reason was set by a health check; by its `gpu` check.
bool IsHealthDrain(const std::string& reason);
bool IsGpuHealthDrain(const std::string& reason);

}  // namespace hpc::op
