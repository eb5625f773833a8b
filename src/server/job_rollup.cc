#include "server/job_rollup.h"

#include <numeric>

#include <fmt/format.h>

namespace hpc::cp {

int WaitRangeOf(int64_t start_time, int64_t submit_time) {
  if (start_time <= 0) return -1;
  const auto& ranges = WaitRanges();
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].second == 0 || start_time - submit_time < ranges[i].second) return static_cast<int>(i);
  }
  return static_cast<int>(ranges.size()) - 1;
}

std::string WaitRangeSql() {
  std::string sql = "CASE WHEN start_time <= 0 THEN -1";
  const auto& ranges = WaitRanges();
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].second)
      sql += fmt::format(" WHEN start_time - submit_time < {} THEN {}", ranges[i].second, i);
    else
      sql += fmt::format(" ELSE {}", i);
  }
  return sql + " END";
}

RollupKey RollupKeyOf(const JobRecord& j) {
  return {j.project, j.submit_time / kRollupSeconds * kRollupSeconds, j.user, j.partition,
          j.state,   WaitRangeOf(j.start_time, j.submit_time)};
}

void RollupDeltas::Add(const JobRecord& j, int sign) {
  RollupCounts& c = deltas_[RollupKeyOf(j)];
  c.jobs += sign;
  c.node_seconds += sign * NodeSecondsOf(j);
}

std::map<RollupKey, RollupCounts> RollupDeltas::Changed() const {
  std::map<RollupKey, RollupCounts> out;
  for (const auto& [k, c] : deltas_) {
    if (c.jobs != 0 || c.node_seconds != 0) out.emplace(k, c);
  }
  return out;
}

StatsPlan PlanStatistics(const JobFilter& f, int64_t bucket) {
  StatsPlan plan;
  plan.grain = std::gcd(bucket, int64_t{86400});
  // Part of a name is not in the rollup; nor are buckets finer than its hours.
  if (!f.name_contains.empty() || plan.grain % kRollupSeconds != 0) {
    plan.scans.emplace_back(f.from, f.to);
    return plan;
  }
  const int64_t first_hour = (f.from + kRollupSeconds - 1) / kRollupSeconds * kRollupSeconds;
  const int64_t end_hour = f.to ? f.to / kRollupSeconds * kRollupSeconds : 0;
  if (f.to && first_hour >= end_hour) {  // no whole hour inside the range
    plan.scans.emplace_back(f.from, f.to);
    return plan;
  }
  plan.use_rollup = true;
  plan.rollup_from = first_hour;
  plan.rollup_to = end_hour;  // 0: open
  if (f.from < first_hour) plan.scans.emplace_back(f.from, first_hour);
  if (f.to && end_hour < f.to) plan.scans.emplace_back(end_hour, f.to);
  return plan;
}

void StatsFold::Add(int64_t time, const std::string& user, const std::string& state, int wait_range, int64_t jobs,
                    int64_t node_seconds) {
  if (jobs <= 0) return;  // a rollup row every job has left
  JobStats::Bucket& b = buckets_[time / bucket_ * bucket_];
  b.states[state] += jobs;
  if (wait_range >= 0 && static_cast<size_t>(wait_range) < wait_.size()) {
    wait_[wait_range] += jobs;
    b.waits[WaitRanges()[wait_range].first] += jobs;
  }
  usage_[{time / 86400 * 86400, user}] += node_seconds;
}

JobStats StatsFold::Finish() const {
  JobStats out;
  for (auto [start, b] : buckets_) {
    b.start = start;
    out.buckets.push_back(std::move(b));
  }
  for (size_t i = 0; i < wait_.size(); ++i) out.wait.emplace_back(WaitRanges()[i].first, wait_[i]);
  for (const auto& [key, seconds] : usage_) {
    out.usage.push_back({key.second, key.first, static_cast<double>(seconds) / 3600.0});
  }
  return out;
}

}  // namespace hpc::cp
