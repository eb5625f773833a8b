// libFuzzer target: the readers of Slurm's JSON (squeue --json, slurmrestd's nodes and
// partitions) that every reconcile pass relies on.
#include <cstddef>
#include <cstdint>
#include <string>

#include "slurm/rest_client.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  (void)hpc::slurm::RestClient::ParseJobs(body);
  (void)hpc::slurm::RestClient::ParseNodes(body);
  (void)hpc::slurm::RestClient::ParsePartitions(body);
  return 0;
}
