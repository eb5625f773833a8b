// A JSON parse that drops, without ever building them, the members of objects at one depth
// whose keys are not wanted: a 10,000-job listing from slurmrestd's /jobs carries some 150 fields
// a job and a reader wants some 20. nlohmann's parser callback did this job until fuzzing found a
// heap-use-after-free in it (3.11.2, discarding object members); this is a plain SAX handler.
#pragma once

#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace hpc::slurm {

// Members of objects nested `depth` containers deep (the outermost value is depth 1) are kept
// only when their key is in `kept`. Returns a discarded value when `text` is not JSON.
nlohmann::json ParseKeeping(const std::string& text, int depth, const std::set<std::string>& kept);

}  // namespace hpc::slurm
