// The job history's statistics kept as hourly rollups, so that the console's charts cost the
// same with a million records as with a thousand. Each job record counts once, in the rollup
// row of (project, hour of its submit time, user, partition, state, queue-wait range), with its
// node-seconds; the store applies each upsert's change (its old contribution out, its new one
// in) in the same transaction as the records. A statistics query reads whole hours from the
// rollup and the partial hours at either end of its range from the records, and folds both
// into JobStats; a filter the rollup cannot answer (part of the name) reads the records alone.
// Everything here is pure; the SQL lives in sql_store.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "messages/job_record.h"
#include "server/store.h"

namespace hpc::cp {

inline constexpr int64_t kRollupSeconds = 3600;

// The index into WaitRanges() of a job's queue wait, or -1 for a job not started.
int WaitRangeOf(int64_t start_time, int64_t submit_time);
// The same as a SQL expression over the jobs table's start_time and submit_time.
std::string WaitRangeSql();

struct RollupKey {
  std::string project;
  int64_t hour = 0;  // start of the hour of the submit time
  std::string user, partition, state;
  int wait_range = -1;
  auto Tie() const { return std::tie(project, hour, user, partition, state, wait_range); }
  bool operator<(const RollupKey& o) const { return Tie() < o.Tie(); }
};
struct RollupCounts {
  int64_t jobs = 0;
  int64_t node_seconds = 0;
};

RollupKey RollupKeyOf(const JobRecord& j);
inline int64_t NodeSecondsOf(const JobRecord& j) { return static_cast<int64_t>(j.nodes) * j.elapsed_seconds; }

// What a batch of upserts changes in the rollup: records replaced count -1, their new
// versions +1; keys whose changes cancel out are dropped.
class RollupDeltas {
 public:
  void Add(const JobRecord& j, int sign);
  std::map<RollupKey, RollupCounts> Changed() const;

 private:
  std::map<RollupKey, RollupCounts> deltas_;
};

// Where a statistics query reads: `scans` from the records ([from, to), 0 = open), and whole
// hours [rollup_from, rollup_to) from the rollup when `use_rollup`. Rows come at `grain`
// seconds (it divides both the bucket and a day, so each row falls in one bucket and one day).
struct StatsPlan {
  int64_t grain = 0;
  bool use_rollup = false;
  int64_t rollup_from = 0, rollup_to = 0;
  std::vector<std::pair<int64_t, int64_t>> scans;
};
StatsPlan PlanStatistics(const JobFilter& f, int64_t bucket_seconds);

// Folds rows (time at the plan's grain, user, state, wait range, jobs, node-seconds) into the
// charts' aggregates, whichever source they came from.
class StatsFold {
 public:
  explicit StatsFold(int64_t bucket_seconds) : bucket_(bucket_seconds) {}
  void Add(int64_t time, const std::string& user, const std::string& state, int wait_range, int64_t jobs,
           int64_t node_seconds);
  JobStats Finish() const;

 private:
  int64_t bucket_;
  std::map<int64_t, JobStats::Bucket> buckets_;
  std::vector<int64_t> wait_ = std::vector<int64_t>(WaitRanges().size(), 0);
  std::map<std::pair<int64_t, std::string>, int64_t> usage_;  // (day, user) -> node-seconds
};

}  // namespace hpc::cp
