#include "kubernetes/work_queue.h"

#include <thread>

#include <gtest/gtest.h>

namespace hpc::kube {
namespace {

using std::chrono::milliseconds;

class WorkQueueTest : public ::testing::Test {
 protected:
  WorkQueue::Clock::time_point now_ = WorkQueue::Clock::time_point{} + std::chrono::hours(1);
  WorkQueue q_{{milliseconds(100), milliseconds(200), milliseconds(1600)}, [this] { return now_; }};
  void Advance(milliseconds d) { now_ += d; }
};

TEST_F(WorkQueueTest, AKeyAddedManyTimesWaitsOnce) {
  for (int i = 0; i < 50; ++i) q_.Add("slurm/a");
  q_.Add("slurm/b");
  EXPECT_EQ(q_.Waiting(), 2u);
  auto first = q_.TryGet();
  auto second = q_.TryGet();
  ASSERT_TRUE(first && second);
  EXPECT_NE(*first, *second);
  EXPECT_FALSE(q_.TryGet()) << "each key is handed out once";
}

TEST_F(WorkQueueTest, AKeyIsNeverHeldByTwoWorkersAndOneAddedWhileHeldWaitsForDone) {
  q_.Add("slurm/a");
  ASSERT_EQ(q_.TryGet(), "slurm/a");
  q_.Add("slurm/a");  // a watch event during the pass
  Advance(milliseconds(500));
  EXPECT_FALSE(q_.TryGet()) << "held by a worker: not handed to a second one";
  q_.Done("slurm/a");
  EXPECT_EQ(q_.TryGet(), "slurm/a") << "the event during the pass gets a pass after it";
  q_.Done("slurm/a");
  Advance(milliseconds(500));
  EXPECT_FALSE(q_.TryGet()) << "and only one";
}

TEST_F(WorkQueueTest, PassesOfOneKeyStartAtLeastMinGapApartWhileOtherKeysGoOn) {
  q_.Add("slurm/a");
  ASSERT_EQ(q_.TryGet(), "slurm/a");
  q_.Done("slurm/a");
  Advance(milliseconds(10));
  q_.Add("slurm/a");
  q_.Add("slurm/b");
  EXPECT_EQ(q_.TryGet(), "slurm/b") << "another key is not held up";
  EXPECT_FALSE(q_.TryGet()) << "a's next pass waits for the gap";
  Advance(milliseconds(89));
  EXPECT_FALSE(q_.TryGet());
  Advance(milliseconds(1));
  EXPECT_EQ(q_.TryGet(), "slurm/a");
}

TEST_F(WorkQueueTest, FailuresBackOffExponentiallyUpToTheMaximumAndForgetStartsAgain) {
  std::vector<int> waited;
  for (int i = 0; i < 6; ++i) {
    q_.AddRateLimited("slurm/a");
    int ms = 0;
    while (!q_.TryGet()) {
      Advance(milliseconds(10));
      ms += 10;
    }
    waited.push_back(ms);
    q_.Done("slurm/a");
  }
  EXPECT_EQ(waited, (std::vector<int>{200, 400, 800, 1600, 1600, 1600}));
  EXPECT_EQ(q_.Failures("slurm/a"), 6);
  q_.Forget("slurm/a");
  EXPECT_EQ(q_.Failures("slurm/a"), 0);
  q_.AddRateLimited("slurm/a");
  Advance(milliseconds(199));
  EXPECT_FALSE(q_.TryGet());
  Advance(milliseconds(1));
  EXPECT_EQ(q_.TryGet(), "slurm/a");
}

TEST_F(WorkQueueTest, AnEventDuringABackoffIsPassedAtOnceAndTheEarlierDueTimeWins) {
  q_.AddRateLimited("slurm/a");
  q_.AddRateLimited("slurm/a");  // 400 ms, but the 200 ms one stays
  Advance(milliseconds(200));
  EXPECT_EQ(q_.TryGet(), "slurm/a");
  q_.Done("slurm/a");
  q_.AddAfter("slurm/a", milliseconds(2000));  // the resync
  Advance(milliseconds(150));
  q_.Add("slurm/a");  // a change: no waiting for the resync
  EXPECT_EQ(q_.TryGet(), "slurm/a");
}

TEST_F(WorkQueueTest, TheEarliestDueKeyComesFirst) {
  q_.AddAfter("slurm/late", milliseconds(300));
  q_.AddAfter("slurm/early", milliseconds(100));
  EXPECT_EQ(q_.NextDue(), now_ + milliseconds(100));
  Advance(milliseconds(400));
  EXPECT_EQ(q_.TryGet(), "slurm/early");
  EXPECT_EQ(q_.TryGet(), "slurm/late");
}

TEST(WorkQueueBlocking, GetWaitsForTheDueTimeAndShutDownReleasesWaitingWorkers) {
  WorkQueue q({milliseconds(0), milliseconds(10), milliseconds(100)});
  const auto start = WorkQueue::Clock::now();
  q.AddAfter("slurm/a", milliseconds(50));
  EXPECT_EQ(q.Get(), "slurm/a");
  EXPECT_GE(WorkQueue::Clock::now() - start, milliseconds(50));
  std::optional<std::string> got = "unset";
  std::thread worker([&] { got = q.Get(); });
  q.ShutDown();
  worker.join();
  EXPECT_EQ(got, std::nullopt);
}

}  // namespace
}  // namespace hpc::kube
