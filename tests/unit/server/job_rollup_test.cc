// The statistics' rollup: which records count where, which ranges read the rollup and which the
// records, and how rows of either fold into the charts' aggregates.
#include "server/job_rollup.h"

#include <gtest/gtest.h>

#include <map>

namespace hpc::cp {
namespace {

JobRecord Job(int64_t submit, int64_t start, const std::string& state = "COMPLETED") {
  JobRecord j;
  j.project = "astro", j.user = "ann", j.partition = "ann-astro", j.state = state;
  j.submit_time = submit, j.start_time = start, j.nodes = 2, j.elapsed_seconds = 30;
  return j;
}

// Each wait falls in the range WaitRanges() names; a job not started in none.
TEST(JobRollup, WaitRangesFollowTheirUpperBounds) {
  EXPECT_EQ(WaitRangeOf(0, 100), -1);
  EXPECT_EQ(WaitRangeOf(105, 100), 0);  // <10s
  EXPECT_EQ(WaitRangeOf(110, 100), 1);  // 10s-1m
  EXPECT_EQ(WaitRangeOf(699, 100), 2);  // 1m-10m
  EXPECT_EQ(WaitRangeOf(700, 100), 3);  // 10 minutes exactly: 10m-1h
  EXPECT_EQ(WaitRangeOf(100 + 3599, 100), 3);
  EXPECT_EQ(WaitRangeOf(100 + 86399, 100), 4);
  EXPECT_EQ(WaitRangeOf(100 + 86400, 100), 5);  // >1d
  EXPECT_EQ(WaitRangeOf(90, 100), 0);           // started "before" submit (clock skew): no wait
  EXPECT_NE(WaitRangeSql().find("WHEN start_time - submit_time < 86400 THEN 4 ELSE 5 END"), std::string::npos)
      << WaitRangeSql();
}

// A record counts in the hour of its submit time; a replaced version leaves its row, and
// changes that cancel out write nothing.
TEST(JobRollup, DeltasMoveARecordBetweenRowsAndDropWhatCancels) {
  JobRecord running = Job(7200 + 59, 7200 + 60, "RUNNING");
  JobRecord done = running;
  done.state = "COMPLETED";
  done.elapsed_seconds = 90;
  EXPECT_EQ(RollupKeyOf(running).hour, 7200);
  EXPECT_EQ(RollupKeyOf(running).wait_range, 0);
  RollupDeltas d;
  d.Add(running, -1);
  d.Add(done, +1);
  auto changed = d.Changed();
  ASSERT_EQ(changed.size(), 2u);
  EXPECT_EQ(changed[RollupKeyOf(running)].jobs, -1);
  EXPECT_EQ(changed[RollupKeyOf(running)].node_seconds, -60);
  EXPECT_EQ(changed[RollupKeyOf(done)].jobs, 1);
  EXPECT_EQ(changed[RollupKeyOf(done)].node_seconds, 180);
  RollupDeltas same;  // the agent reporting a record again, unchanged
  same.Add(done, -1);
  same.Add(done, +1);
  EXPECT_TRUE(same.Changed().empty());
}

// Whole hours come from the rollup, the partial hours at each end from the records; a name
// filter or buckets finer than an hour read the records alone.
TEST(JobRollup, PlansReadWholeHoursFromTheRollup) {
  JobFilter f;
  f.project = "astro";
  f.from = 3600 * 10 + 5;
  f.to = 3600 * 20 + 7;
  StatsPlan p = PlanStatistics(f, 21600);
  EXPECT_EQ(p.grain, 21600);
  ASSERT_TRUE(p.use_rollup);
  EXPECT_EQ(p.rollup_from, 3600 * 11);
  EXPECT_EQ(p.rollup_to, 3600 * 20);
  ASSERT_EQ(p.scans.size(), 2u);
  EXPECT_EQ(p.scans[0], (std::pair<int64_t, int64_t>{3600 * 10 + 5, 3600 * 11}));
  EXPECT_EQ(p.scans[1], (std::pair<int64_t, int64_t>{3600 * 20, 3600 * 20 + 7}));
  f.from = 3600 * 10, f.to = 3600 * 20;  // aligned: the rollup alone
  EXPECT_TRUE(PlanStatistics(f, 3600).scans.empty());
  EXPECT_EQ(PlanStatistics(f, 7 * 86400).grain, 86400);
  f.from = 3600 * 10 + 1, f.to = 3600 * 11 + 1;  // no whole hour inside
  p = PlanStatistics(f, 3600);
  EXPECT_FALSE(p.use_rollup);
  ASSERT_EQ(p.scans.size(), 1u);
  f.from = 0, f.to = 0;  // the whole history
  p = PlanStatistics(f, 3600);
  EXPECT_TRUE(p.use_rollup && p.scans.empty() && p.rollup_from == 0 && p.rollup_to == 0);
  EXPECT_FALSE(PlanStatistics(f, 1800).use_rollup);
  EXPECT_EQ(PlanStatistics(f, 1800).grain, 1800);
  f.name_contains = "sim";
  EXPECT_FALSE(PlanStatistics(f, 3600).use_rollup);
}

// Rows fold into buckets (states and wait ranges), wait ranges over the whole range and
// node-hours per user per day; empty rows count nothing.
TEST(JobRollup, FoldSumsRowsIntoTheChartsAggregates) {
  StatsFold fold(21600);
  fold.Add(3600, "ann", "COMPLETED", 0, 2, 7200);
  fold.Add(7200, "ann", "FAILED", -1, 1, 0);
  fold.Add(86400 + 3600, "bob", "COMPLETED", 5, 3, 3600);
  fold.Add(86400 + 7200, "bob", "COMPLETED", 1, 0, 0);  // every job left this row
  JobStats s = fold.Finish();
  ASSERT_EQ(s.buckets.size(), 2u);
  EXPECT_EQ(s.buckets[0].start, 0);
  EXPECT_EQ(s.buckets[0].states.at("COMPLETED"), 2);
  EXPECT_EQ(s.buckets[0].states.at("FAILED"), 1);
  EXPECT_EQ(s.buckets[1].start, 86400);
  EXPECT_EQ(s.buckets[0].waits, (std::map<std::string, int64_t>{{"<10s", 2}}))
      << "a job that never started waits in none";
  EXPECT_EQ(s.buckets[1].waits, (std::map<std::string, int64_t>{{">1d", 3}}));
  EXPECT_EQ(s.wait[0].second, 2);
  EXPECT_EQ(s.wait[1].second, 0);
  EXPECT_EQ(s.wait[5].second, 3);
  ASSERT_EQ(s.usage.size(), 2u);
  EXPECT_EQ(s.usage[0].user, "ann");
  EXPECT_DOUBLE_EQ(s.usage[0].node_hours, 2.0);
  EXPECT_EQ(s.usage[1].day, 86400);
}

}  // namespace
}  // namespace hpc::cp
