// When the daemon runs its next reconcile pass. A cluster that is converging or busy passes as
// it always did (every 200 ms while converging; 250 ms with autoscaled nodesets, 1 s without).
// An idle one (converged, nothing in Slurm's queue but finished jobs, so every nodeset is at its
// minimum) passes only every `idle_interval`, and at once when the change probe's stamp moves:
// a submission (slurmctld's job_submit hook touches a file) or a spec the CLI or the agent
// wrote. The probe is a few stat(2) calls, so an idle data plane costs almost nothing while a
// submission still starts a pass within one probe tick. Pure, for tests: time comes in.
#pragma once

#include <chrono>
#include <optional>
#include <string>

namespace hpc::op {

struct PassOutcome {
  bool converged = false;
  bool any_autoscaled = false;
  bool idle = false;  // Slurm answered with no job that is not finished
  // When a time-based duty (a workspace token's renewal) falls due: an idle cluster passes by
  // then even if nothing moves the probe.
  std::optional<std::chrono::seconds> duty_in;
};

class PassSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  struct Options {
    std::chrono::milliseconds converging{200};
    std::chrono::milliseconds autoscaled{250};
    std::chrono::milliseconds steady{1000};
    std::chrono::milliseconds idle{30000};
    // Change-triggered passes are at least this far apart: a burst of submissions is read
    // in a few listings, not one per job.
    std::chrono::milliseconds min_gap{100};
  };
  PassSchedule() : PassSchedule(Options{}) {}
  explicit PassSchedule(Options o) : o_(o) {}

  // Whether a pass is due at `now`, given the change probe's stamp now.
  bool Due(Clock::time_point now, const std::string& stamp) const;
  // After a pass that started when the probe read `stamp` (a change during the pass is seen
  // by the next Due).
  void Done(Clock::time_point now, const PassOutcome& outcome, const std::string& stamp);
  // The earliest time Due can turn true given the probe's stamp now: when a moved stamp clears
  // min_gap, else the next timed pass. The daemon sleeps until then unless woken by a change.
  Clock::time_point NextCheck(const std::string& stamp) const;
  // Something the daemon saw itself (a pod started or died) wants a pass at once.
  void PassNow() { next_ = Clock::time_point{}; }
  bool idle() const { return idle_; }
  // Whether `stamp` differs from the one the last pass started with.
  bool Moved(const std::string& stamp) const { return stamp != stamp_; }
  const Options& options() const { return o_; }

 private:
  Options o_;
  Clock::time_point next_{};  // the first pass is due at once
  Clock::time_point last_{};
  std::string stamp_;
  bool idle_ = false;
};

}  // namespace hpc::op
