// The daemon's pass schedule: an idle cluster lists nothing until the change probe moves, and
// then passes at once; a busy one keeps its cadence.
#include <gtest/gtest.h>

#include "operator/pass_schedule.h"

namespace hpc::op {
namespace {

using namespace std::chrono_literals;
using Clock = PassSchedule::Clock;

const Clock::time_point t0 = Clock::time_point{} + 1000h;

TEST(PassSchedule, IdleClusterWaitsUntilTheProbeMoves) {
  PassSchedule s;
  ASSERT_TRUE(s.Due(t0, "a"));  // the first pass runs at once
  s.Done(t0, {true, true, true}, "a");
  EXPECT_TRUE(s.idle());
  // Nothing changed: no pass for the whole idle interval, however often it is asked.
  for (auto t = t0; t < t0 + 30s; t += 50ms) ASSERT_FALSE(s.Due(t, "a")) << (t - t0).count();
  EXPECT_TRUE(s.Due(t0 + 30s, "a"));  // the safety net
  // A submission moves the stamp: a pass in the same tick.
  EXPECT_TRUE(s.Due(t0 + 5s, "b"));
}

TEST(PassSchedule, AnyChangeLeavesIdleAndBusyKeepsTheCadence) {
  PassSchedule s;
  s.Done(t0, {true, true, true}, "a");
  ASSERT_TRUE(s.Due(t0 + 1s, "b"));
  s.Done(t0 + 1s, {true, true, false}, "b");  // a pending job: busy
  EXPECT_FALSE(s.idle());
  EXPECT_FALSE(s.Due(t0 + 1s + 200ms, "b"));
  EXPECT_TRUE(s.Due(t0 + 1s + 250ms, "b"));
  s.Done(t0 + 2s, {false, true, false}, "b");  // converging
  EXPECT_TRUE(s.Due(t0 + 2s + 200ms, "b"));
  s.Done(t0 + 3s, {true, false, false}, "b");  // steady, no autoscaled nodeset
  EXPECT_FALSE(s.Due(t0 + 3s + 500ms, "b"));
  EXPECT_TRUE(s.Due(t0 + 4s, "b"));
}

TEST(PassSchedule, ChangesDuringAPassAreSeenAndBurstsAreSpaced) {
  PassSchedule s;
  s.Done(t0, {true, true, true}, "a");
  // The probe read "a" before the pass; "b" arrived during it.
  EXPECT_FALSE(s.Due(t0 + 50ms, "b"));  // within the minimum gap
  EXPECT_TRUE(s.Due(t0 + 100ms, "b"));
}

TEST(PassSchedule, ADaemonEventPassesAtOnce) {
  PassSchedule s;
  s.Done(t0, {true, true, true}, "a");
  s.PassNow();
  EXPECT_TRUE(s.Due(t0 + 1ms, "a"));
}

}  // namespace
}  // namespace hpc::op
