// libFuzzer target: the readers of Slurm's output that every reconcile pass relies on (the job
// listing squeue prints, slurmrestd's jobs, nodes and partitions).
#include <cstddef>
#include <cstdint>
#include <string>

#include "slurm/rest_client.h"
#include "slurm/squeue_jobs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  (void)hpc::slurm::ParseSqueueListing(body);
  (void)hpc::slurm::RestClient::ParseJobs(body);
  (void)hpc::slurm::RestClient::ParseNodes(body);
  (void)hpc::slurm::RestClient::ParsePartitions(body);
  return 0;
}
