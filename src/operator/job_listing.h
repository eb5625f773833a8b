// Slurm's job list for the operator's passes. A listing is reused until it is older than four
// times what it took: a large queue takes Slurm a second or more to list, and listing back to
// back would hold a core (at twice, 2,000 queued short jobs kept the daemon and its squeue at a
// third of a core, and Slurm's throughput 5-10% below Slurm alone). Small queues list in
// milliseconds and are read every pass; a submission or a pod event invalidates the listing (the
// local daemon's change probe, the Kubernetes operator's submission watch).
#pragma once

#include <chrono>
#include <functional>
#include <optional>
#include <vector>

#include "slurm/slurm_client.h"

namespace hpc::op {

class JobListing {
 public:
  using Clock = std::chrono::steady_clock;
  explicit JobListing(std::function<Clock::time_point()> now = Clock::now) : now_(std::move(now)) {}

  using Lister = std::function<Result<std::vector<slurm::SlurmJob>>()>;
  // The jobs for this pass, or nullptr when unknown (Slurm does not answer, or the listing
  // failed): the caller then decides nothing that needs them.
  const std::vector<slurm::SlurmJob>* Get(bool slurm_answers, const Lister& list);
  int listings() const { return listings_; }
  // Whether the last Get answered with a listing made before it was called: such a listing
  // predates the node list read for the same pass, so a job may show there as pending yet
  // already run on a worker that the node list counts busy.
  bool reused() const { return reused_; }
  // The next Get lists afresh (something just moved: a reused listing would be stale). What the
  // last Get returned stays readable until then: a pass holds it (and pointers into it) while
  // its nodesets decide, and one of them may ask for a fresh listing for the next pass.
  void Invalidate() { took_ = Clock::duration::zero(); }

 private:
  std::function<Clock::time_point()> now_;
  Clock::time_point at_{};
  Clock::duration took_{};
  std::optional<std::vector<slurm::SlurmJob>> jobs_;
  int listings_ = 0;
  bool reused_ = false;
};

}  // namespace hpc::op
