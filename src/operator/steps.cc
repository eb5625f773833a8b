#include "operator/steps.h"

#include <spdlog/spdlog.h>

namespace hpc::op {

StepsOutcome RunSteps(const std::string& subject, const std::vector<Step>& steps) {
  StepsOutcome out;
  for (const auto& step : steps) {
    Status s = step.fn();
    if (s.ok()) continue;
    if (s.code() == StatusCode::kFailedPrecondition) {
      if (out.waiting.empty()) out.waiting = s.message();
    } else {
      spdlog::error("{}: step {}: {}", subject, step.name, s.message());
      out.failures.push_back(step.name + ": " + s.message());
    }
    if (step.stop_on_error) break;
  }
  return out;
}

}  // namespace hpc::op
