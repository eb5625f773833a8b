#include "operator/health_policy.h"

#include <gtest/gtest.h>

#include "operator/scale_down.h"

namespace hpc::op {
namespace {

// Scale options where only whether Slurm could be asked is set.
ScaleOptions ScalerOptions(bool slurm_visible) {
  ScaleOptions o;
  o.slurm_visible = slurm_visible;
  return o;
}

constexpr int64_t kNow = 1'000'000;

slurm::HealthReport Ok(int64_t at) { return {true, at, true, "", "", {}}; }
slurm::HealthReport Fail(int64_t at, const std::string& check = "tmp", const std::string& detail = "full") {
  return {true, at, false, check, detail, {}};
}

HealthWorker Worker(const std::string& pod, slurm::HealthReport report) {
  HealthWorker w;
  w.pod = pod;
  w.report = std::move(report);
  return w;
}
HealthWorker HealthDrained(const std::string& pod, int64_t since, slurm::HealthReport report, bool busy = false) {
  HealthWorker w = Worker(pod, std::move(report));
  w.drained = w.drained_by_health = true;
  w.reason_changed_at = since;
  w.busy = busy;
  return w;
}

HealthOptions Opts(int max_unhealthy = 1, int64_t replace_after = 600, int replacements_left = 10) {
  return {true, max_unhealthy, replace_after, replacements_left, kNow};
}

// A failing report drains the worker with the check's name and detail behind the prefix.
TEST(HealthPolicyTest, AFailingWorkerIsDrainedWithTheCheckInTheReason) {
  auto plan =
      PlanHealth({Worker("cpu-0", Fail(kNow - 5, "tmp", "/tmp has 1 MiB free")), Worker("cpu-1", Ok(kNow))}, Opts());
  ASSERT_EQ(plan.drain.size(), 1u);
  EXPECT_EQ(plan.drain[0].pod, "cpu-0");
  EXPECT_EQ(plan.drain[0].reason, "hpcplane:health:tmp: /tmp has 1 MiB free");
  EXPECT_TRUE(IsHealthDrain(plan.drain[0].reason));
  EXPECT_EQ(plan.unhealthy, 1);
  EXPECT_TRUE(plan.resume.empty());
}

// At most maxUnhealthy workers are drained by checks at once; the rest stay in service and
// are reported as held back (the check is suspect).
TEST(HealthPolicyTest, TheCapHoldsBackDrainsBeyondMaxUnhealthy) {
  std::vector<HealthWorker> all;
  for (int i = 0; i < 5; ++i) all.push_back(Worker("cpu-" + std::to_string(i), Fail(kNow, "munge", "no answer")));
  auto plan = PlanHealth(all, Opts(2));
  EXPECT_EQ(plan.drain.size(), 2u);
  EXPECT_EQ(plan.held_back.size(), 3u);
  EXPECT_EQ(plan.held_back_detail, "munge: no answer");
  // Workers already drained by checks use up the cap.
  all[0] = HealthDrained("cpu-0", kNow - 10, Fail(kNow));
  all[1] = HealthDrained("cpu-1", kNow - 10, Fail(kNow));
  plan = PlanHealth(all, Opts(2));
  EXPECT_TRUE(plan.drain.empty());
  EXPECT_EQ(plan.held_back.size(), 3u);
  EXPECT_EQ(plan.unhealthy, 2);
}

// Only drains the check set are resumed, and only on a passing report written after the drain.
TEST(HealthPolicyTest, OnlyHealthDrainsAreResumedAndOnlyByANewerPassingReport) {
  auto plan = PlanHealth({HealthDrained("cpu-0", kNow - 10, Ok(kNow - 2)),   // passes since: resumed
                          HealthDrained("cpu-1", kNow - 10, Ok(kNow - 20)),  // stale report: stays
                          HealthDrained("cpu-2", kNow - 10, Fail(kNow))},    // still failing: stays
                         Opts(5));
  EXPECT_EQ(plan.resume, (std::vector<std::string>{"cpu-0"}));
  EXPECT_EQ(plan.unhealthy, 2);
  // An admin's drain (no health prefix) is never resumed, and a failing report does not
  // re-drain it under our reason.
  HealthWorker admin = Worker("cpu-3", Ok(kNow));
  admin.drained = true;
  admin.reason_changed_at = kNow - 100;
  HealthWorker admin_failing = Worker("cpu-4", Fail(kNow));
  admin_failing.drained = true;
  plan = PlanHealth({admin, admin_failing}, Opts(5));
  EXPECT_TRUE(plan.resume.empty());
  EXPECT_TRUE(plan.drain.empty());
  EXPECT_TRUE(plan.replace.empty());
}

// A report older than the worker's last drain change (e.g. read before an admin resumed it)
// does not drain it again; the next run of the check does.
TEST(HealthPolicyTest, AStaleFailingReportDoesNotDrain) {
  HealthWorker w = Worker("cpu-0", Fail(kNow - 30));
  w.reason_changed_at = kNow - 10;
  EXPECT_TRUE(PlanHealth({w}, Opts()).drain.empty());
  w.report = Fail(kNow - 1);
  EXPECT_EQ(PlanHealth({w}, Opts()).drain.size(), 1u);
}

// Replaced only when drained for replaceAfter, idle, and within the hourly budget; a running
// job is never cut short.
TEST(HealthPolicyTest, ReplacedOnlyWhenIdlePastReplaceAfterWithinBudget) {
  auto young = PlanHealth({HealthDrained("cpu-0", kNow - 100, Fail(kNow))}, Opts(1, 600));
  EXPECT_TRUE(young.replace.empty());
  auto busy = PlanHealth({HealthDrained("cpu-0", kNow - 700, Fail(kNow), true)}, Opts(1, 600));
  EXPECT_TRUE(busy.replace.empty());
  auto due = PlanHealth({HealthDrained("cpu-0", kNow - 700, Fail(kNow))}, Opts(1, 600));
  EXPECT_EQ(due.replace, (std::vector<std::string>{"cpu-0"}));
  EXPECT_EQ(due.unhealthy, 0);
  auto budget =
      PlanHealth({HealthDrained("cpu-0", kNow - 700, Fail(kNow)), HealthDrained("cpu-1", kNow - 700, Fail(kNow))},
                 Opts(2, 600, 1));
  EXPECT_EQ(budget.replace.size(), 1u);
  auto none = PlanHealth({HealthDrained("cpu-0", kNow - 700, Fail(kNow))}, Opts(1, 600, 0));
  EXPECT_TRUE(none.replace.empty());
}

// A worker whose reports stopped (a run of the check hangs, holding the lock every later run
// needs) is drained as stale while another worker reports; not while Slurm cannot hear from it,
// not when no worker reports (slurmctld or the clock, not the worker), not within the bound of
// its pod's start, not right after an admin changed its drain state, and within the cap. A
// fresh passing report resumes it.
TEST(HealthPolicyTest, AWorkerWhoseReportsStoppedWhileAnotherReportsIsDrainedAsStale) {
  HealthOptions opts = Opts(1, 600);
  opts.stale_after_seconds = 220;
  const HealthWorker quiet = Worker("cpu-0", Ok(kNow - 300));
  const HealthWorker peer = Worker("cpu-9", Ok(kNow - 5));
  auto plan = PlanHealth({quiet, peer}, opts);
  ASSERT_EQ(plan.drain.size(), 1u);
  EXPECT_EQ(plan.drain[0].pod, "cpu-0");
  EXPECT_EQ(plan.drain[0].reason,
            "hpcplane:health:stale: no report for 300s: a check does not finish (a hung mount or device)");
  EXPECT_TRUE(PlanHealth({quiet}, opts).drain.empty()) << "nobody reports: not this worker's fault";
  EXPECT_TRUE(PlanHealth({quiet, Worker("cpu-9", Ok(kNow - 250))}, opts).drain.empty()) << "nor when all are old";
  EXPECT_TRUE(PlanHealth({Worker("cpu-0", Ok(kNow - 200)), peer}, opts).drain.empty()) << "within the bound";
  HealthWorker unheard = quiet;
  unheard.responding = false;
  EXPECT_TRUE(PlanHealth({unheard, peer}, opts).drain.empty()) << "Slurm's own business: it is down";
  HealthWorker restarted = quiet;
  restarted.started_at = kNow - 30;  // its Extra is from its pod's earlier run
  EXPECT_TRUE(PlanHealth({restarted, peer}, opts).drain.empty());
  HealthWorker resumed = quiet;
  resumed.reason_changed_at = kNow - 60;
  EXPECT_TRUE(PlanHealth({resumed, peer}, opts).drain.empty()) << "an admin resumed it a minute ago";
  auto capped = PlanHealth({quiet, Worker("cpu-1", Ok(kNow - 300)), peer}, opts);
  EXPECT_EQ(capped.drain.size(), 1u);
  EXPECT_EQ(capped.held_back, (std::vector<std::string>{"cpu-1"}));
  HealthOptions off = opts;
  off.stale_after_seconds = 0;
  EXPECT_TRUE(PlanHealth({quiet, peer}, off).drain.empty());
  // Drained as stale, then a run finishes and passes: resumed.
  HealthWorker drained = HealthDrained("cpu-0", kNow - 30, Ok(kNow));
  EXPECT_EQ(PlanHealth({drained}, opts).resume, (std::vector<std::string>{"cpu-0"}));
  api::HealthChecksSpec defaults;
  EXPECT_EQ(StaleReportAfter(defaults), 220);
  api::SlurmCluster admin_scheduled;
  admin_scheduled.spec.extra_config = {"HealthCheckProgram=/usr/sbin/nhc"};
  EXPECT_EQ(StaleReportAfter(admin_scheduled), 0) << "the admin's program, run when the admin says";
  admin_scheduled.spec.extra_config = {"healthcheckinterval=600"};
  EXPECT_EQ(StaleReportAfter(admin_scheduled), 0);
  EXPECT_EQ(StaleReportAfter(api::SlurmCluster{}), 220);
}

// A GPU fault parked past replaceAfter no longer holds back other drains (cap 1), and still
// counts as unhealthy.
TEST(HealthPolicyTest, AParkedGpuFaultDoesNotHoldBackOtherDrains) {
  HealthWorker gpu = HealthDrained("gpu-0", kNow - 7000, Fail(kNow, "gpu", "GPU 00000000:3b:00.0: 2 uncorrectable"));
  gpu.gpu_fault = true;
  auto plan = PlanHealth({gpu, Worker("gpu-1", Fail(kNow, "tmp", "full"))}, Opts(1, 600));
  EXPECT_EQ(plan.drain.size(), 1u);
  EXPECT_TRUE(plan.held_back.empty());
  EXPECT_EQ(plan.unhealthy, 2);
  HealthWorker young = gpu;
  young.reason_changed_at = kNow - 100;  // not yet past replaceAfter: it counts like any drain
  EXPECT_EQ(PlanHealth({young, Worker("gpu-1", Fail(kNow, "tmp", "full"))}, Opts(1, 600)).held_back.size(), 1u);
}

// A GPU fault stays with the GPU: its worker stays drained (holding the GPU from other workers)
// however long, until its check passes again; it counts as unhealthy meanwhile.
TEST(HealthPolicyTest, AWorkerDrainedForAGpuFaultIsKeptNotReplacedAndResumedOnceItPasses) {
  HealthWorker gpu = HealthDrained("gpu-0", kNow - 7000, Fail(kNow, "gpu", "GPU 00000000:3b:00.0: 2 uncorrectable"));
  gpu.gpu_fault = true;
  auto kept = PlanHealth({gpu}, Opts(1, 600));
  EXPECT_TRUE(kept.replace.empty());
  EXPECT_TRUE(kept.resume.empty());
  EXPECT_EQ(kept.unhealthy, 1);
  gpu.report = Ok(kNow);
  EXPECT_EQ(PlanHealth({gpu}, Opts(1, 600)).resume, (std::vector<std::string>{"gpu-0"}));
  EXPECT_TRUE(IsGpuHealthDrain("hpcplane:health:gpu: GPU 00000000:3b:00.0: row remapping failed"));
  EXPECT_FALSE(IsGpuHealthDrain("hpcplane:health:tmp: /tmp has 1 MiB free"));
  EXPECT_FALSE(IsGpuHealthDrain("gpu: an admin's words"));
}

// A worker slurmctld drained for a fault is replaced like a health-drained one (idle, past
// replaceAfter, within budget), never resumed by a passing report, and not held against the cap.
TEST(HealthPolicyTest, SlurmFaultDrainsAreReplacedNeverResumed) {
  auto slurm_drained = [](const std::string& pod, int64_t since, bool busy = false) {
    HealthWorker w = Worker(pod, Ok(kNow));
    w.drained = w.drained_by_slurm = true;
    w.reason_changed_at = since;
    w.busy = busy;
    return w;
  };
  auto young = PlanHealth({slurm_drained("cpu-0", kNow - 100)}, Opts(1, 600));
  EXPECT_TRUE(young.resume.empty());
  EXPECT_TRUE(young.replace.empty());
  EXPECT_EQ(young.unhealthy, 1);
  EXPECT_TRUE(PlanHealth({slurm_drained("cpu-0", kNow - 700, true)}, Opts(1, 600)).replace.empty());
  auto due = PlanHealth({slurm_drained("cpu-0", kNow - 700)}, Opts(1, 600));
  EXPECT_EQ(due.replace, (std::vector<std::string>{"cpu-0"}));
  EXPECT_EQ(due.unhealthy, 0);
  // The cap counts the checks' drains only: a failing worker is still drained.
  auto capped = PlanHealth({slurm_drained("cpu-0", kNow - 100), Worker("cpu-1", Fail(kNow))}, Opts(1, 600));
  EXPECT_EQ(capped.drain.size(), 1u);
  HealthOptions off = Opts(1, 600);
  off.enabled = false;
  auto disabled = PlanHealth({slurm_drained("cpu-0", kNow - 700)}, off);
  EXPECT_TRUE(disabled.replace.empty());
  EXPECT_TRUE(disabled.resume.empty());
}

// Turning checks off gives back every worker they drained, and drains nothing new.
TEST(HealthPolicyTest, TurnedOffResumesItsDrainsAndDrainsNothing) {
  HealthOptions off = Opts();
  off.enabled = false;
  auto plan = PlanHealth({HealthDrained("cpu-0", kNow - 10, Fail(kNow)), Worker("cpu-1", Fail(kNow))}, off);
  EXPECT_EQ(plan.resume, (std::vector<std::string>{"cpu-0"}));
  EXPECT_TRUE(plan.drain.empty());
  EXPECT_EQ(plan.unhealthy, 0);
}

// A worker without a report (checks not run yet, or an admin's text in Extra) is left alone.
TEST(HealthPolicyTest, NoReportNoAction) {
  auto plan = PlanHealth({Worker("cpu-0", slurm::ParseHealthReport("rack 12"))}, Opts());
  EXPECT_TRUE(plan.drain.empty() && plan.resume.empty() && plan.replace.empty() && plan.held_back.empty());
}

// The scaler treats a health drain as lost capacity: it adds a worker in its place, and never
// resumes, drains or removes the drained one (the health policy does).
TEST(HealthPolicyTest, ScalerReplacesCapacityButLeavesHealthDrainsAlone) {
  WorkerView bad{"cpu-0", 0, true, false, false, false, 0, true};
  WorkerView good{"cpu-1", 1, true, false, false, false, 0, false};
  auto up = PlanScale({bad, good}, 2, ScalerOptions(true));
  EXPECT_EQ(up.create, (std::vector<int>{2}));
  EXPECT_TRUE(up.resume.empty());
  EXPECT_TRUE(up.remove.empty());
  auto down = PlanScale({bad, good}, 0, ScalerOptions(true));
  EXPECT_EQ(down.drain, (std::vector<std::string>{"cpu-1"}));
  EXPECT_TRUE(down.remove.empty());
}

}  // namespace
}  // namespace hpc::op
