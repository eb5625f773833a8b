// An API submission as the API shows it: to the member who submitted it (its state, the job it
// became) and to the agent that runs it.
#pragma once

#include <nlohmann/json.hpp>

#include "server/store.h"

namespace hpc::cp {

nlohmann::json SubmissionJson(const Submission& x);

}  // namespace hpc::cp
