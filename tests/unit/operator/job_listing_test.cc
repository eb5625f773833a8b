// The operator's job listing: read every pass while listing is cheap, spaced out when it is
// slow, unknown (nullptr) when Slurm does not answer or after a failed listing.
#include "operator/job_listing.h"

#include <gtest/gtest.h>

namespace hpc::op {
namespace {

using namespace std::chrono_literals;

// A reader whose listing "takes" `cost` on the fake clock.
class SlowReader : public slurm::SlurmReader {
 public:
  explicit SlowReader(JobListing::Clock::time_point* now) : now_(now) {}
  Result<std::string> Ping() override { return std::string("22.05.8"); }
  Result<std::vector<slurm::SlurmNode>> Nodes() override { return std::vector<slurm::SlurmNode>{}; }
  Result<std::vector<slurm::SlurmPartition>> Partitions() override { return std::vector<slurm::SlurmPartition>{}; }
  Result<std::vector<slurm::SlurmJob>> Jobs() override {
    *now_ += cost;
    if (fail) return Status::Error("slurmrestd: timeout");
    slurm::SlurmJob j;
    j.job_id = ++calls;
    return std::vector<slurm::SlurmJob>{j};
  }
  JobListing::Clock::duration cost = 5ms;
  bool fail = false;
  int calls = 0;

 private:
  JobListing::Clock::time_point* now_;
};

TEST(JobListing, CheapListingsAreReadEveryPass) {
  JobListing::Clock::time_point now{};
  SlowReader reader(&now);
  JobListing listing([&] { return now; });
  for (int pass = 0; pass < 4; ++pass) {
    ASSERT_NE(listing.Get(true, [&] { return reader.Jobs(); }), nullptr);
    now += 250ms;  // the daemon's pass interval
  }
  EXPECT_EQ(reader.calls, 4);
}

TEST(JobListing, SlowListingsAreReusedForFourTimesTheirCost) {
  JobListing::Clock::time_point now{};
  SlowReader reader(&now);
  reader.cost = 3s;
  JobListing listing([&] { return now; });
  EXPECT_EQ(listing.Get(true, [&] { return reader.Jobs(); })->front().job_id, 1);  // now = 3 s
  now += 1s;
  EXPECT_EQ(listing.Get(true, [&] { return reader.Jobs(); })->front().job_id, 1);  // 4 s after it started: reused
  EXPECT_TRUE(listing.reused());
  now += 7s;
  EXPECT_EQ(listing.Get(true, [&] { return reader.Jobs(); })->front().job_id, 1);  // 11 s
  now += 1s;
  EXPECT_EQ(listing.Get(true, [&] { return reader.Jobs(); })->front().job_id, 2);  // 12 s = four times its cost
  EXPECT_FALSE(listing.reused());
  EXPECT_EQ(reader.calls, 2);
}

// A pass for something that just moved (a worker became ready) never reuses a listing: a job
// that started since would count as pending while its workers count as busy.
TEST(JobListing, AnInvalidatedListingIsReadAgain) {
  JobListing::Clock::time_point now{};
  SlowReader reader(&now);
  JobListing listing([&] { return now; });
  ASSERT_NE(listing.Get(true, [&] { return reader.Jobs(); }), nullptr);
  listing.Invalidate();
  ASSERT_NE(listing.Get(true, [&] { return reader.Jobs(); }), nullptr);
  EXPECT_EQ(reader.calls, 2);
}

// A pass reads its listing (and pointers into it) to its end, also after one of its nodesets
// asked for a fresh listing for the next pass.
TEST(JobListing, AListingInvalidatedDuringAPassStaysReadableUntilTheNextGet) {
  JobListing::Clock::time_point now{};
  SlowReader reader(&now);
  JobListing listing([&] { return now; });
  const auto* jobs = listing.Get(true, [&] { return reader.Jobs(); });
  ASSERT_NE(jobs, nullptr);
  ASSERT_FALSE(jobs->empty());
  const slurm::SlurmJob* first = &jobs->front();
  const int64_t id = first->job_id;
  const std::string state = first->state;
  listing.Invalidate();
  EXPECT_EQ(first->job_id, id);
  EXPECT_EQ(first->state, state);
  EXPECT_EQ(reader.calls, 1) << "invalidating lists nothing by itself";
  ASSERT_NE(listing.Get(true, [&] { return reader.Jobs(); }), nullptr);
  EXPECT_EQ(reader.calls, 2);
}

TEST(JobListing, UnknownWhenSlurmDoesNotAnswerOrAfterAFailure) {
  JobListing::Clock::time_point now{};
  SlowReader reader(&now);
  JobListing listing([&] { return now; });
  ASSERT_NE(listing.Get(true, [&] { return reader.Jobs(); }), nullptr);
  EXPECT_EQ(listing.Get(false, [&] { return reader.Jobs(); }), nullptr);  // Slurm unreachable: no stale answer either
  now += 1s;
  reader.fail = true;
  EXPECT_EQ(listing.Get(true, [&] { return reader.Jobs(); }), nullptr);
  reader.fail = false;
  now += 1ms;  // a failed listing leaves nothing to reuse: the next pass reads again
  ASSERT_NE(listing.Get(true, [&] { return reader.Jobs(); }), nullptr);
  EXPECT_EQ(listing.listings(), 3);  // the failed one counted too
}

}  // namespace
}  // namespace hpc::op
