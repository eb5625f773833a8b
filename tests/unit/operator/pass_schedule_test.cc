// The daemon's pass schedule: an idle cluster lists nothing until the change probe moves, and
// then passes at once; a busy one keeps its cadence.
#include <gtest/gtest.h>

#include "operator/pass_schedule.h"

namespace hpc::op {
namespace {

using namespace std::chrono_literals;
using Clock = PassSchedule::Clock;

const Clock::time_point t0 = Clock::time_point{} + 1000h;

PassOutcome Outcome(bool converged, bool any_autoscaled, bool idle,
                    std::optional<std::chrono::seconds> duty_in = std::nullopt) {
  PassOutcome o;
  o.converged = converged;
  o.any_autoscaled = any_autoscaled;
  o.idle = idle;
  o.duty_in = duty_in;
  return o;
}

TEST(PassSchedule, IdleClusterWaitsUntilTheProbeMoves) {
  PassSchedule s;
  ASSERT_TRUE(s.Due(t0, "a"));  // the first pass runs at once
  s.Done(t0, Outcome(true, true, true), "a");
  EXPECT_TRUE(s.idle());
  // Nothing changed: no pass for the whole idle interval, however often it is asked.
  for (auto t = t0; t < t0 + 30s; t += 50ms) ASSERT_FALSE(s.Due(t, "a")) << (t - t0).count();
  EXPECT_TRUE(s.Due(t0 + 30s, "a"));  // the safety net
  // A submission moves the stamp: a pass in the same tick.
  EXPECT_TRUE(s.Due(t0 + 5s, "b"));
}

TEST(PassSchedule, AnyChangeLeavesIdleAndBusyKeepsTheCadence) {
  PassSchedule s;
  s.Done(t0, Outcome(true, true, true), "a");
  ASSERT_TRUE(s.Due(t0 + 1s, "b"));
  s.Done(t0 + 1s, Outcome(true, true, false), "b");  // a pending job: busy
  EXPECT_FALSE(s.idle());
  EXPECT_FALSE(s.Due(t0 + 1s + 200ms, "b"));
  EXPECT_TRUE(s.Due(t0 + 1s + 250ms, "b"));
  s.Done(t0 + 2s, Outcome(false, true, false), "b");  // converging
  EXPECT_TRUE(s.Due(t0 + 2s + 200ms, "b"));
  s.Done(t0 + 3s, Outcome(true, false, false), "b");  // steady, no autoscaled nodeset
  EXPECT_FALSE(s.Due(t0 + 3s + 500ms, "b"));
  EXPECT_TRUE(s.Due(t0 + 4s, "b"));
}

TEST(PassSchedule, ChangesDuringAPassAreSeenAndBurstsAreSpaced) {
  PassSchedule s;
  s.Done(t0, Outcome(true, true, true), "a");
  // The probe read "a" before the pass; "b" arrived during it.
  EXPECT_FALSE(s.Due(t0 + 50ms, "b"));  // within the minimum gap
  EXPECT_TRUE(s.Due(t0 + 100ms, "b"));
}

// The daemon sleeps until NextCheck unless a change wakes it: the time it names must be the
// first at which Due turns true, for an unmoved and for a moved stamp.
TEST(PassSchedule, NextCheckNamesTheFirstMomentAPassIsDue) {
  PassSchedule s;
  s.Done(t0, Outcome(true, true, true), "a");
  EXPECT_EQ(s.NextCheck("a"), t0 + 30s);
  EXPECT_EQ(s.NextCheck("b"), t0 + 100ms);
  EXPECT_FALSE(s.Due(s.NextCheck("b") - 1ms, "b"));
  EXPECT_TRUE(s.Due(s.NextCheck("b"), "b"));
  s.PassNow();
  EXPECT_LE(s.NextCheck("a"), t0);
}

// Guards token renewal on an idle cluster: a duty due before the idle interval ends sets the
// next pass (a 12 s token was not renewed when idle passes were 30 s apart).
TEST(PassSchedule, AnIdleClusterStillPassesWhenATimeBasedDutyFallsDue) {
  PassSchedule s;
  PassOutcome idle_with_token = Outcome(true, true, true, std::chrono::seconds(4));
  s.Done(t0, idle_with_token, "a");
  EXPECT_TRUE(s.idle());
  EXPECT_FALSE(s.Due(t0 + 3s, "a"));
  EXPECT_TRUE(s.Due(t0 + 4s, "a"));
  // A duty further out than the idle interval does not stretch it.
  s.Done(t0, Outcome(true, true, true, std::chrono::seconds(3600)), "a");
  EXPECT_TRUE(s.Due(t0 + 30s, "a"));
}

TEST(PassSchedule, ADaemonEventPassesAtOnce) {
  PassSchedule s;
  s.Done(t0, Outcome(true, true, true), "a");
  s.PassNow();
  EXPECT_TRUE(s.Due(t0 + 1ms, "a"));
}

}  // namespace
}  // namespace hpc::op
