#include "operator/job_listing.h"

#include <spdlog/spdlog.h>

namespace hpc::op {

const std::vector<slurm::SlurmJob>* JobListing::Get(bool slurm_answers, const Lister& list) {
  reused_ = false;
  if (!slurm_answers) return nullptr;
  Clock::time_point start = now_();
  if (jobs_ && start - at_ < 4 * took_) {
    reused_ = true;
    return &*jobs_;
  }
  auto listed = list();
  ++listings_;
  at_ = start;
  took_ = now_() - start;
  if (!listed.ok()) {
    spdlog::warn("cannot list jobs: {}", listed.status().message());
    jobs_.reset();
    return nullptr;
  }
  jobs_ = std::move(*listed);
  return &*jobs_;
}

}  // namespace hpc::op
