#include "operator/health_policy.h"

#include <algorithm>

#include <fmt/format.h>

#include "slurm/config.h"

namespace hpc::op {

bool IsHealthDrain(const std::string& reason) { return reason.rfind(slurm::kHealthDrainPrefix, 0) == 0; }

bool IsGpuHealthDrain(const std::string& reason) {
  return reason.rfind(std::string(slurm::kHealthDrainPrefix) + "gpu:", 0) == 0;
}

int64_t StaleReportAfter(const api::HealthChecksSpec& h) {
  return 3 * h.interval_seconds + 10 * h.timeout_seconds + h.max_clock_skew_seconds;
}

int64_t StaleReportAfter(const api::SlurmCluster& c) {
  return slurm::RunsPeriodicHealthChecks(c) ? StaleReportAfter(c.spec.health_checks) : 0;
}

HealthPlan PlanHealth(const std::vector<HealthWorker>& workers, const HealthOptions& opts) {
  HealthPlan plan;
  // Drained for a GPU fault past replaceAfter: kept (never replaced), still unhealthy, but no
  // longer held against maxUnhealthy, or one parked GPU would hold back every other drain.
  int drained = 0, drained_by_slurm = 0, parked = 0;
  int replacements_left = opts.replacements_left;
  auto maybe_replace = [&](const HealthWorker& w) {
    if (!w.busy && opts.now - w.reason_changed_at >= opts.replace_after_seconds && replacements_left > 0) {
      plan.replace.push_back(w.pod);
      --replacements_left;
    }
  };
  for (const auto& w : workers) {
    if (w.drained_by_slurm && opts.enabled) {
      ++drained_by_slurm;
      maybe_replace(w);
    }
    if (!w.drained_by_health) continue;
    const bool passes_again = w.report.present && w.report.ok && w.report.at > w.reason_changed_at;
    if (!opts.enabled || passes_again) {
      plan.resume.push_back(w.pod);
      continue;
    }
    if (w.gpu_fault && opts.now - w.reason_changed_at >= opts.replace_after_seconds) {
      ++parked;
      continue;
    }
    ++drained;
    if (!w.gpu_fault) maybe_replace(w);
  }
  if (opts.enabled) {
    int64_t freshest = 0;  // the newest report of any worker: is the path from workers to us alive?
    for (const auto& w : workers) {
      if (w.report.present) freshest = std::max(freshest, w.report.at);
    }
    for (const auto& w : workers) {
      if (w.drained || !w.report.present) continue;
      const int64_t age = opts.now - std::max(w.report.at, w.started_at);
      // Stale: no run has reported for long, while Slurm hears from the worker, another worker
      // reported lately, and nobody changed its drain state meanwhile (an admin's resume gives
      // the check time again).
      const bool stale = opts.stale_after_seconds > 0 && w.responding && age > opts.stale_after_seconds &&
                         opts.now - freshest <= opts.stale_after_seconds &&
                         opts.now - w.reason_changed_at > opts.stale_after_seconds;
      // A report older than the last drain change was read before an admin's resume (or
      // before our own): the next run of the check speaks for the worker now.
      if (!stale && (w.report.ok || w.report.at <= w.reason_changed_at)) continue;
      const std::string check = stale ? "stale" : w.report.check;
      const std::string detail =
          stale ? fmt::format("no report for {}s: a check does not finish (a hung mount or device)", age)
                : w.report.detail;
      if (drained >= opts.max_unhealthy) {
        if (plan.held_back.empty()) plan.held_back_detail = check + ": " + detail;
        plan.held_back.push_back(w.pod);
        continue;
      }
      plan.drain.push_back({w.pod, fmt::format("{}{}: {}", slurm::kHealthDrainPrefix, check, detail)});
      ++drained;
    }
  }
  plan.unhealthy = drained + parked + drained_by_slurm - static_cast<int>(plan.replace.size());
  return plan;
}

}  // namespace hpc::op
