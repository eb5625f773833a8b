#include "operator/scale_down.h"

#include <gtest/gtest.h>

namespace hpc::op {
namespace {

// Scale options where only whether Slurm could be asked is set.
ScaleOptions WithSlurmVisible(bool slurm_visible) {
  ScaleOptions o;
  o.slurm_visible = slurm_visible;
  return o;
}

WorkerView W(int ord, bool registered = true, bool busy = false, bool ours = false, bool admin = false) {
  return {"cpu-" + std::to_string(ord), ord, registered, busy, ours, admin};
}

// A rolling upgrade's outdated workers are no capacity (new ones start for them), are never
// resumed or picked for a scale-down, and go once Slurm shows them drained by hpcplane with no job.
TEST(PlanScaleTest, OutdatedWorkersAreNoCapacityAndGoOnceDrainedAndIdle) {
  WorkerView old_busy = W(0, true, true);
  old_busy.outdated = true;
  WorkerView old_idle = W(1, true, false);
  old_idle.outdated = true;
  auto plan = PlanScale({old_busy, old_idle}, 2, WithSlurmVisible(true));
  EXPECT_EQ(plan.create, (std::vector<int>{2, 3}));
  EXPECT_TRUE(plan.remove.empty()) << "not drained in Slurm yet: a job may just have started there";
  old_busy.drain_ours = old_idle.drain_ours = true;
  plan = PlanScale({old_busy, old_idle, W(2), W(3)}, 1, WithSlurmVisible(true));
  EXPECT_TRUE(plan.resume.empty());
  EXPECT_EQ(plan.remove, (std::vector<std::string>{"cpu-1"}));
  EXPECT_EQ(plan.drain, (std::vector<std::string>{"cpu-3"})) << "the scale-down picks a current worker";
}

// Scale-up creates the lowest free ordinals.
TEST(PlanScaleTest, CreatesLowestFreeOrdinals) {
  auto plan = PlanScale({W(1)}, 3, WithSlurmVisible(true));
  EXPECT_EQ(plan.create, (std::vector<int>{0, 2}));
  EXPECT_TRUE(plan.drain.empty());
}

// A worker replaced earlier in the same pass does not lend its name to the new one.
TEST(PlanScaleTest, OrdinalsRetiredInThisPassAreNotReused) {
  ScaleOptions opts = WithSlurmVisible(true);
  opts.retired_ordinals = {0};
  auto plan = PlanScale({W(1)}, 2, opts);
  EXPECT_EQ(plan.create, (std::vector<int>{2}));
}

// Idle workers are drained before busy ones, highest ordinal first.
TEST(PlanScaleTest, DrainsIdleBeforeBusy) {
  auto plan = PlanScale({W(0, true, false), W(1, true, true), W(2, true, false)}, 1, WithSlurmVisible(true));
  EXPECT_EQ(plan.drain, (std::vector<std::string>{"cpu-2", "cpu-0"}));
  EXPECT_TRUE(plan.remove.empty());
}

// A busy worker is drained when it must go, but never removed while busy.
TEST(PlanScaleTest, BusyDrainedWorkerIsKeptUntilIdle) {
  auto busy = PlanScale({W(0), W(1, true, true, true)}, 1, WithSlurmVisible(true));
  EXPECT_TRUE(busy.remove.empty());
  EXPECT_TRUE(busy.drain.empty());
  auto idle = PlanScale({W(0), W(1, true, false, true)}, 1, WithSlurmVisible(true));
  EXPECT_EQ(idle.remove, (std::vector<std::string>{"cpu-1"}));
}

// Admin drains are never resumed, drained again, or removed.
TEST(PlanScaleTest, AdminDrainsAreLeftAlone) {
  auto plan = PlanScale({W(0, true, false, false, true), W(1)}, 0, WithSlurmVisible(true));
  EXPECT_EQ(plan.drain, (std::vector<std::string>{"cpu-1"}));
  EXPECT_TRUE(plan.remove.empty());
  auto up = PlanScale({W(0, true, false, false, true)}, 2, WithSlurmVisible(true));
  EXPECT_TRUE(up.resume.empty());
  EXPECT_EQ(up.create, (std::vector<int>{1}));
}

// Without Slurm's view nothing is drained or removed (fail closed), but scale-up still works.
TEST(PlanScaleTest, FailsClosedWithoutSlurm) {
  auto down = PlanScale({W(0), W(1, true, false, true)}, 0, WithSlurmVisible(false));
  EXPECT_TRUE(down.drain.empty());
  EXPECT_TRUE(down.remove.empty());
  auto up = PlanScale({}, 2, WithSlurmVisible(false));
  EXPECT_EQ(up.create.size(), 2u);
}

// Scale-up reuses a worker hpcplane was draining instead of creating a new one.
TEST(PlanScaleTest, ScaleUpResumesOurDrains) {
  auto plan = PlanScale({W(0), W(1, true, true, true)}, 2, WithSlurmVisible(true));
  EXPECT_EQ(plan.resume, (std::vector<std::string>{"cpu-1"}));
  EXPECT_TRUE(plan.create.empty());
  EXPECT_TRUE(plan.remove.empty());
}

// Unregistered workers are not drain candidates: Slurm cannot drain what it does not know.
TEST(PlanScaleTest, UnregisteredWorkersAreNotDrained) {
  auto plan = PlanScale({W(0, false), W(1, false)}, 0, WithSlurmVisible(true));
  EXPECT_TRUE(plan.drain.empty());
}

// Autoscaled nodesets drain only workers idle past idleTimeout, and never busy ones.
TEST(PlanScaleTest, IdleTimeoutGatesAutoscaledDrains) {
  ScaleOptions opts;
  opts.idle_timeout = 60;
  WorkerView young = W(0), old = W(1), busy = W(2, true, true);
  young.idle_seconds = 10;
  old.idle_seconds = 61;
  auto plan = PlanScale({young, old, busy}, 0, opts);
  EXPECT_EQ(plan.drain, (std::vector<std::string>{"cpu-1"}));
}

// Rate limits cap how many workers one decision adds or drains.
TEST(PlanScaleTest, RateLimitsCapDecisions) {
  ScaleOptions opts;
  opts.max_create = 2;
  EXPECT_EQ(PlanScale({}, 5, opts).create.size(), 2u);
  opts.max_drain = 1;
  EXPECT_EQ(PlanScale({W(0), W(1), W(2)}, 0, opts).drain.size(), 1u);
}

}  // namespace
}  // namespace hpc::op
