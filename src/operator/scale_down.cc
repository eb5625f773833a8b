#include "operator/scale_down.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace hpc::op {

ScalePlan PlanScale(const std::vector<WorkerView>& workers, int desired, const ScaleOptions& opts) {
  const bool slurm_visible = opts.slurm_visible;
  ScalePlan plan;
  int active = 0;
  std::set<int> used = opts.retired_ordinals;
  for (const auto& w : workers) {
    used.insert(w.ordinal);
    if (!w.drain_ours && !w.drain_health && !w.outdated) ++active;
  }
  std::vector<std::string> notes;
  if (active < desired) {
    int shortage = desired - active;
    // Reuse workers we were draining before creating new ones: they are already registered.
    for (const auto& w : workers) {
      if (shortage == 0) break;
      if (w.drain_ours && !w.outdated && slurm_visible) {
        plan.resume.push_back(w.pod);
        --shortage;
      }
    }
    if (opts.max_create >= 0) shortage = std::min(shortage, opts.max_create);
    for (int ord = 0; shortage > 0; ++ord) {
      if (used.count(ord)) continue;
      plan.create.push_back(ord);
      used.insert(ord);
      --shortage;
    }
    notes.push_back(fmt::format("scale up {}→{}", active, desired));
  } else if (active > desired && slurm_visible) {
    std::vector<const WorkerView*> candidates;
    for (const auto& w : workers) {
      if (!w.registered || w.drain_ours || w.drain_admin || w.drain_health || w.outdated) continue;
      if (opts.idle_timeout && (w.busy || w.idle_seconds < *opts.idle_timeout)) continue;
      candidates.push_back(&w);
    }
    std::sort(candidates.begin(), candidates.end(), [](const WorkerView* a, const WorkerView* b) {
      if (a->busy != b->busy) return !a->busy;
      return a->ordinal > b->ordinal;
    });
    int excess = active - desired;
    if (opts.max_drain >= 0) excess = std::min(excess, opts.max_drain);
    for (const auto* w : candidates) {
      if (excess == 0) break;
      plan.drain.push_back(w->pod);
      --excess;
    }
    if (!plan.drain.empty()) {
      std::string names;
      for (const auto& n : plan.drain) names += (names.empty() ? "" : ", ") + n;
      notes.push_back(fmt::format("scale down {}→{}: draining {}{}", active,
                                  active - static_cast<int>(plan.drain.size()), names,
                                  opts.idle_timeout ? " (idle past idleTimeout)" : ""));
    }
  }
  if (slurm_visible) {
    for (const auto& w : workers) {
      bool resuming = std::find(plan.resume.begin(), plan.resume.end(), w.pod) != plan.resume.end();
      if (w.drain_ours && w.registered && !w.busy && !resuming) plan.remove.push_back(w.pod);
    }
    if (!plan.remove.empty()) {
      std::string names;
      for (const auto& n : plan.remove) names += (names.empty() ? "" : ", ") + n;
      notes.push_back("removing drained idle " + names);
    }
  }
  for (const auto& n : notes) plan.decision += (plan.decision.empty() ? "" : "; ") + n;
  return plan;
}

}  // namespace hpc::op
