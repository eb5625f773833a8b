// libFuzzer target: the parser of sacct -P output the agent ships to the control plane, and
// the CSV/JSON encoders of what it returns.
#include <cstddef>
#include <cstdint>
#include <string>

#include "agent/sacct.h"
#include "messages/job_record.h"
#include "slurm/sizes.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto jobs = hpc::cp::ParseSacct(text, "dp1");
  if (jobs.ok()) {
    for (const auto& j : *jobs) {
      (void)hpc::cp::ToCsvLine(j);
      (void)hpc::cp::ToJson(j).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  (void)hpc::cp::ParseSlurmDuration(text);
  (void)hpc::slurm::ParseSlurmSizeKiB(text);
  return 0;
}
