#include "operator/pass_schedule.h"

#include <algorithm>

namespace hpc::op {

bool PassSchedule::Due(Clock::time_point now, const std::string& stamp) const {
  if (now >= next_) return true;
  return stamp != stamp_ && now >= last_ + o_.min_gap;
}

PassSchedule::Clock::time_point PassSchedule::NextCheck(const std::string& stamp) const {
  if (stamp != stamp_) return std::min(next_, last_ + o_.min_gap);
  return next_;
}

void PassSchedule::Done(Clock::time_point now, const PassOutcome& outcome, const std::string& stamp) {
  last_ = now;
  stamp_ = stamp;
  idle_ = outcome.converged && outcome.idle;
  Clock::duration wait = !outcome.converged       ? o_.converging
                         : idle_                  ? o_.idle
                         : outcome.any_autoscaled ? o_.autoscaled
                                                  : o_.steady;
  if (outcome.duty_in) wait = std::min<Clock::duration>(wait, *outcome.duty_in);
  next_ = now + wait;
}

}  // namespace hpc::op
