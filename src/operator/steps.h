// A reconcile written as named steps, shared by the reconcilers. A step returns
//   Ok                   done;
//   FailedPrecondition   waiting: something it needs is not there yet (the message says what);
//   any other error      failed: something went wrong and is reported as such.
// The three are told apart by the status code, never by the message. A step marked
// `stop_on_error` ends the run when it does not finish: the steps after it need what it makes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::op {

struct Step {
  std::string name;
  std::function<Status()> fn;
  bool stop_on_error = false;
};

struct StepsOutcome {
  std::string waiting;                // the first step's reason for waiting, if any waits
  std::vector<std::string> failures;  // "step: message" of each failed step, in order
  bool done() const { return waiting.empty() && failures.empty(); }
  // The first failure, else what the first waiting step waits for; empty when done.
  std::string FirstProblem() const { return !failures.empty() ? failures.front() : waiting; }
};

// Runs the steps in order; failures are logged with `subject` ("cluster \"c1\"").
StepsOutcome RunSteps(const std::string& subject, const std::vector<Step>& steps);

}  // namespace hpc::op
