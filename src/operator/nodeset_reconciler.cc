#include "operator/nodeset_reconciler.h"

#include "slurm/config.h"

#include "operator/dataset_volume.h"

#include <algorithm>
#include <ctime>
#include <map>

#include <spdlog/spdlog.h>

#include "api/codec.h"
#include "operator/conditions.h"
#include "operator/demand.h"
#include "operator/health_policy.h"
#include "operator/scale_down.h"

namespace hpc::op {

int DesiredFromSpec(const api::SlurmCluster& c, const api::NodeSet& ns) {
  int min = ns.MinReplicas(c.spec.min_replica_count);
  int want = ns.spec.replicas.value_or(min);
  return std::clamp(want, min, std::max(min, ns.spec.max_replicas));
}

namespace {

void AddEvent(api::NodeSetStatus* st, const std::string& type, const std::string& reason, const std::string& message) {
  if (!st->events.empty() && st->events.back().reason == reason && st->events.back().message == message) return;
  st->events.push_back({Rfc3339Now(), type, reason, message});
  while (st->events.size() > api::kMaxEvents) st->events.erase(st->events.begin());
}

}  // namespace

int NodeSetReconciler::Allowance(std::deque<int64_t>* history, int per_minute, int64_t now) {
  while (!history->empty() && history->front() <= now - 60) history->pop_front();
  if (per_minute <= 0) return -1;
  return std::max(0, per_minute - static_cast<int>(history->size()));
}

api::NodeSetStatus NodeSetReconciler::Reconcile(const api::SlurmCluster& c, const api::NodeSet& ns,
                                                slurm::SlurmReader* reader, const PendingByPartition* pending) {
  api::NodeSetStatus st = ns.status;
  st.observed_generation = ns.metadata.generation;
  held_for_fresh_listing_ = false;
  Pass pass;
  pass.now = std::time(nullptr);
  if (Status s = Observe(c, ns, reader, &pass); !s.ok()) {
    SetCondition(&st.conditions, "Ready", false, "RuntimeError", s.message());
    return st;
  }
  // Repairs need Slurm's view: without it nothing is reset, drained, replaced or restarted.
  if (pass.visible) Repair(c, ns, &pass, &st);
  Decide(c, ns, pending, &pass, &st);
  Act(c, ns, &pass);
  if (pass.visible) ForgetOrphanNodes(ns, &pass);
  Report(c, ns, pass, &st);
  return st;
}

Status NodeSetReconciler::Observe(const api::SlurmCluster& c, const api::NodeSet& ns, slurm::SlurmReader* reader,
                                  Pass* pass) {
  ASSIGN_OR_RETURN(pass->pods, rt_->ListPods({{kLabelCluster, c.metadata.name}, {kLabelNodeSet, ns.metadata.name}}));
  if (!reader) return Status::Ok();
  auto listed = reader->Nodes();
  if (!listed.ok()) {
    pass->slurm_error = listed.status().message();
    return Status::Ok();
  }
  pass->visible = true;
  for (auto& n : *listed) pass->nodes[n.name] = n;
  return Status::Ok();
}

void NodeSetReconciler::Repair(const api::SlurmCluster& c, const api::NodeSet& ns, Pass* pass, api::NodeSetStatus* st) {
  RepairStuckNodes(ns, &pass->nodes, pass->now, st);
  ResetRestartedWorkers(ns, pass->pods, &pass->nodes, st, &pass->errors);
  pass->replaced = ApplyHealth(c, ns, pass->pods, &pass->nodes, pass->now, st, &pass->errors);
  pass->restarted = RestartUnregisteredWorkers(ns, pass->pods, pass->nodes, pass->now, st, &pass->errors);
  pass->lost = ReplaceLostWorkers(ns, pass->pods, pass->nodes, pass->now, st, &pass->errors);
  RegisterWorkersAgain(ns, pass->pods, pass->nodes, pass->now, st);
  RetireOutdatedWorkers(c, ns, pass, st);
}

void NodeSetReconciler::RetireOutdatedWorkers(const api::SlurmCluster& c, const api::NodeSet& ns, Pass* pass,
                                              api::NodeSetStatus* st) {
  const std::string wanted = WorkerImage(c, ns, in_);
  if (!controller_current_ || wanted.empty()) return;
  const api::UpgradeSpec& policy = c.spec.upgrade;
  for (const auto& p : pass->pods) {
    if (p.image.empty() || p.image == wanted || p.delete_by != 0) continue;
    if (pass->replaced.count(p.name) || pass->restarted.count(p.name) || pass->lost.count(p.name)) continue;
    auto it = pass->nodes.find(p.name);
    if (it == pass->nodes.end()) {
      // Never registered (still starting): no job can be on it.
      Status s = rt_->DeletePod(p.name);
      if (!s.ok()) {
        pass->errors.push_back(s.message());
        continue;
      }
      AddEvent(st, "Normal", "Upgrade", fmt::format("worker {} on {} removed before it registered", p.name, p.image));
      pass->replaced.insert(p.name);  // its name waits a pass, as a health replacement's does
      continue;
    }
    pass->outdated.insert(p.name);
    auto& n = it->second;
    const bool ours = n.reason.rfind(slurm::kDrainReasonPrefix, 0) == 0;
    if (n.Drain() && (!ours || IsHealthDrain(n.reason) || slurm::IsSlurmFaultDrain(n))) continue;  // not ours to move
    if (!n.Drain()) {
      const std::string reason = fmt::format("{} upgrade: runs {}, the nodeset runs {}", slurm::kDrainReasonPrefix,
                                             p.image.substr(0, p.image.find('@')), wanted.substr(0, wanted.find('@')));
      if (Status s = control_->DrainNode(p.name, reason); !s.ok()) {
        pass->errors.push_back(s.message());
        continue;
      }
      AddEvent(st, "Normal", "Upgrade",
               fmt::format("worker {} drained for the upgrade: removed once its jobs end{}", p.name,
                           n.Busy() ? "" : " (it runs none)"));
      continue;
    }
    if (!n.Busy() || policy.after_deadline == api::kAfterDeadlineWait) continue;
    if (pass->now - n.reason_changed_at < policy.drain_deadline_seconds) continue;
    // Once a minute at most: Slurm takes a while to end a job, and a requeue it refuses stays refused.
    auto [last, first] = jobs_ended_at_.try_emplace(p.name, 0);
    if (pass->now - last->second < 60) continue;
    last->second = pass->now;
    const bool requeue = policy.after_deadline == api::kAfterDeadlineRequeue;
    Status s = control_->EndJobsOnNode(p.name, requeue);
    const std::string msg =
        fmt::format("worker {} still runs jobs {} after its drain for the upgrade (spec.upgrade.drainDeadline): {} {}",
                    p.name, api::FormatDuration(pass->now - n.reason_changed_at), requeue ? "requeued" : "cancelled",
                    s.ok() ? "them" : "them, not all: " + s.message());
    AddEvent(st, "Warning", "UpgradeDeadline", msg);
    spdlog::warn("nodeset {}: {}", ns.metadata.name, msg);
  }
  for (auto it = jobs_ended_at_.begin(); it != jobs_ended_at_.end();) {
    it = pass->outdated.count(it->first) || WorkerOrdinal(ns, it->first) < 0 ? std::next(it) : jobs_ended_at_.erase(it);
  }
}

void NodeSetReconciler::Decide(const api::SlurmCluster& c, const api::NodeSet& ns, const PendingByPartition* pending,
                               Pass* pass, api::NodeSetStatus* st) {
  std::vector<WorkerView> workers;
  std::set<int> leaving;  // pods being deleted: no capacity, and their names not free yet
  int busy_nodes = 0;
  for (const auto& p : pass->pods) {
    if (pass->replaced.count(p.name) || pass->restarted.count(p.name) || pass->lost.count(p.name)) continue;
    if (p.delete_by != 0) {
      // A worker removed by an earlier pass, still terminating (a Kubernetes pod's grace period):
      // counted as a replica, it made a scale-down by one drain a second worker.
      leaving.insert(WorkerOrdinal(ns, p.name));
      continue;
    }
    WorkerView w;
    w.pod = p.name;
    w.ordinal = WorkerOrdinal(ns, p.name);
    w.outdated = pass->outdated.count(p.name) > 0;
    auto it = pass->nodes.find(p.name);
    if (it != pass->nodes.end()) {
      const auto& n = it->second;
      w.registered = true;
      w.busy = n.Busy();
      bool ours = n.reason.rfind(slurm::kDrainReasonPrefix, 0) == 0;
      // Slurm's own fault drains are handled as health drains: replaced, never resumed.
      w.drain_health = n.Drain() && (IsHealthDrain(n.reason) || slurm::IsSlurmFaultDrain(n));
      w.drain_ours = n.Drain() && ours && !w.drain_health;
      w.drain_admin = n.Drain() && !ours && !w.drain_health;
      w.idle_seconds = w.busy ? 0 : std::max<int64_t>(0, pass->now - n.last_busy);
      // An outdated worker's jobs finish where they are; what the queue needs is new workers.
      if (w.busy && !w.outdated) ++busy_nodes;
    }
    workers.push_back(w);
  }

  // Desired workers: pinned by hand, or busy + what pending jobs need (DESIGN, Autoscaling).
  const bool autoscaled = IsAutoscaled(ns);
  const int min = ns.MinReplicas(c.spec.min_replica_count);
  int desired = DesiredFromSpec(c, ns);
  if (autoscaled) {
    if (pass->visible && pending) {
      NodeShape shape{ns.spec.resources.cpus, ns.spec.resources.memory_mib, ns.spec.resources.gpus};
      static const std::vector<const slurm::SlurmJob*> kNone;
      auto it = pending->find(ns.PartitionName());
      Demand demand = ComputeDemand(it == pending->end() ? kNone : it->second, shape, ns.spec.max_replicas,
                                    std::max(0, ns.spec.max_replicas - busy_nodes));
      desired = DesiredWorkers(busy_nodes, demand, min, ns.spec.max_replicas);
      pass->demand_note =
          fmt::format("{} busy, {} pending job(s) need {} more", busy_nodes, demand.jobs_counted, demand.nodes_needed);
      // A job listed as pending before the node list was read may have started since on a
      // worker counted busy here, and would be counted twice: wait for a listing made after.
      // What an earlier pass asked for stands (its workers may still be starting: holding
      // below it would scale down and up again).
      const int current = static_cast<int>(workers.size());
      const int held = std::max({current, min, st->desired});
      if (pending_predates_nodes_ && desired > held) {
        desired = held;
        held_for_fresh_listing_ = true;
        pass->demand_note += "; more once jobs are listed again";
      }
      std::string unfit_msg;
      for (const auto& u : demand.unfit) {
        std::string m = fmt::format("job {} {}", u.job_id, u.why);
        unfit_msg += (unfit_msg.empty() ? "" : "; ") + m;
        AddEvent(st, "Warning", "Unschedulable", m);
      }
      SetCondition(&st->conditions, "Unschedulable", !demand.unfit.empty(),
                   demand.unfit.empty() ? "AllJobsFit" : "JobNeverFits", unfit_msg);
    } else {
      // Without Slurm's view, hold the current count: no scale-up from guesses, no removal.
      int active = 0;
      for (const auto& w : workers) active += w.drain_ours || w.drain_health ? 0 : 1;
      desired = std::clamp(active, min, ns.spec.max_replicas);
      pass->demand_note = "Slurm not visible; holding";
    }
  }
  pass->desired = desired;

  ScaleOptions opts;
  opts.slurm_visible = pass->visible;
  if (autoscaled) opts.idle_timeout = ns.spec.idle_timeout_seconds;
  opts.max_create = Allowance(&created_[ns.metadata.name], ns.spec.scale_up_per_minute, pass->now);
  opts.max_drain = Allowance(&drained_[ns.metadata.name], ns.spec.scale_down_per_minute, pass->now);
  for (const auto& name : pass->replaced) opts.retired_ordinals.insert(WorkerOrdinal(ns, name));
  for (const auto& name : pass->lost) opts.retired_ordinals.insert(WorkerOrdinal(ns, name));
  opts.retired_ordinals.insert(leaving.begin(), leaving.end());
  pass->plan = PlanScale(workers, desired, opts);
  if (!controller_current_ && !pass->plan.create.empty()) {
    // Its workers would run a newer slurmd than slurmctld, which Slurm does not support.
    pass->plan.create.clear();
    pass->plan.decision += std::string(pass->plan.decision.empty() ? "" : "; ") +
                           "new workers wait for slurmctld to run the new Slurm release";
  }
}

void NodeSetReconciler::Act(const api::SlurmCluster& c, const api::NodeSet& ns, Pass* pass) {
  const ScalePlan& plan = pass->plan;
  auto& errors = pass->errors;
  for (size_t i = 0; i < plan.create.size() + plan.resume.size(); ++i) created_[ns.metadata.name].push_back(pass->now);
  for (size_t i = 0; i < plan.drain.size(); ++i) drained_[ns.metadata.name].push_back(pass->now);
  for (const auto& name : plan.resume) {
    Status s = control_->ResumeNode(name);
    if (!s.ok()) errors.push_back(s.message());
  }
  for (const auto& d : ns.spec.datasets) {
    if (plan.create.empty()) break;
    if (Status s = EnsureDatasetVolume(rt_, c, d); !s.ok()) errors.push_back(s.message());
  }
  for (int ord : plan.create) {
    ClearJobsOfEarlierPod(ns, WorkerPodName(ns, ord), pass);
    Status s = rt_->CreatePod(BuildWorkerPod(c, ns, ord, in_));
    if (!s.ok()) errors.push_back(s.message());
  }
  for (const auto& name : plan.drain) {
    Status s = control_->DrainNode(
        name, fmt::format("{} scale-down of nodeset {}", slurm::kDrainReasonPrefix, ns.metadata.name));
    if (!s.ok()) errors.push_back(s.message());
  }
  for (const auto& name : plan.remove) {
    // Slurm showed this worker drained with no job: the pod goes first, then the node record.
    Status s = rt_->DeletePod(name);
    if (s.ok()) s = control_->DeleteNode(name);
    if (!s.ok()) errors.push_back(s.message());
  }
}

void NodeSetReconciler::ClearJobsOfEarlierPod(const api::NodeSet& ns, const std::string& name, Pass* pass) {
  auto it = pass->nodes.find(name);
  if (!pass->visible || it == pass->nodes.end() || !it->second.Busy()) return;
  const auto& n = it->second;
  if (n.Drain() && n.reason.rfind(slurm::kDrainReasonPrefix, 0) != 0) {
    pass->earlier_pods.push_back(fmt::format(
        "worker {} starts again while Slurm counts jobs there from its earlier pod; its admin's drain is left, and "
        "with it those jobs",
        name));
    spdlog::warn("nodeset {}: {}", ns.metadata.name, pass->earlier_pods.back());
    return;
  }
  Status s = control_->ResetNode(
      name, fmt::format("{} worker starts again; its jobs ended with its earlier pod", slurm::kDrainReasonPrefix));
  if (!s.ok()) {
    pass->errors.push_back(s.message());
    return;
  }
  pass->earlier_pods.push_back(
      fmt::format("worker {} starts again while Slurm counted jobs there from its earlier "
                  "pod: set DOWN and resumed, so Slurm ends (and requeues) them",
                  name));
  spdlog::warn("nodeset {}: {}", ns.metadata.name, pass->earlier_pods.back());
}

// Nodes Slurm still lists for this nodeset whose pod is gone (e.g. removed while hpcplane was
// down): forgotten once they hold no job. A pod created in this pass counts: after a restart
// slurmctld recovers the workers' nodes before their pods are back, and deleting the node of a
// worker that is registering left it without one (`up` waited 20 s for its restart).
void NodeSetReconciler::ForgetOrphanNodes(const api::NodeSet& ns, Pass* pass) {
  std::set<std::string> created;
  for (int ord : pass->plan.create) created.insert(WorkerPodName(ns, ord));
  for (const auto& [node_name, n] : pass->nodes) {
    const std::string& name = node_name;  // a plain reference: lambdas may not capture bindings (clang 14)
    bool has_pod = created.count(name) ||
                   std::any_of(pass->pods.begin(), pass->pods.end(), [&](const auto& p) { return p.name == name; });
    if (!has_pod && WorkerOrdinal(ns, name) >= 0 && n.features.count(ns.metadata.name) && !n.Busy()) {
      Status s = control_->DeleteNode(name);
      if (!s.ok()) pass->errors.push_back(s.message());
    }
  }
}

void NodeSetReconciler::Report(const api::SlurmCluster& c, const api::NodeSet& ns, const Pass& pass,
                               api::NodeSetStatus* st) {
  const ScalePlan& plan = pass.plan;
  const auto& errors = pass.errors;
  if (!plan.decision.empty()) {
    st->last_decision = plan.decision + (pass.demand_note.empty() ? "" : " (" + pass.demand_note + ")");
    AddEvent(st, "Normal", "Scaled", st->last_decision);
    spdlog::info("nodeset {}: {}", ns.metadata.name, st->last_decision);
  }
  last_errors_ = static_cast<int>(errors.size());
  for (const auto& e : pass.earlier_pods) AddEvent(st, "Warning", "JobsOfEarlierPod", e);
  for (const auto& e : errors) AddEvent(st, "Warning", "ScalingFailed", e);
  for (const auto& e : errors) spdlog::error("nodeset {}: {}", ns.metadata.name, e);

  // Counts from what exists after this pass.
  st->desired = pass.desired;
  st->replicas = st->ready = st->busy = st->idle = st->draining = st->unhealthy = st->outdated = 0;
  const std::string wanted = WorkerImage(c, ns, in_);
  auto after = rt_->ListPods({{kLabelCluster, c.metadata.name}, {kLabelNodeSet, ns.metadata.name}});
  if (after.ok()) {
    for (const auto& p : *after) {
      ++st->replicas;
      const bool removed_now = std::find(plan.remove.begin(), plan.remove.end(), p.name) != plan.remove.end();
      if (!wanted.empty() && !p.image.empty() && p.image != wanted && !removed_now) ++st->outdated;
      auto it = pass.nodes.find(p.name);
      if (it == pass.nodes.end()) continue;
      const auto& n = it->second;
      bool removed = std::find(plan.remove.begin(), plan.remove.end(), p.name) != plan.remove.end();
      if (removed) continue;
      bool draining = n.Drain() || std::find(plan.drain.begin(), plan.drain.end(), p.name) != plan.drain.end();
      // Drained by a health check or by Slurm for a fault: out of service, but not on its way
      // out like a scale-down.
      if (n.Drain() && (IsHealthDrain(n.reason) || slurm::IsSlurmFaultDrain(n)))
        ++st->unhealthy;
      else if (draining)
        ++st->draining;
      else if (n.Usable())
        ++st->ready;
      if (n.Busy())
        ++st->busy;
      else if (n.Usable())
        ++st->idle;
    }
  }
  const bool visible = pass.visible;
  SetCondition(&st->conditions, "SlurmVisible", visible, visible ? "Answering" : "SlurmUnreachable",
               visible ? "" : pass.slurm_error + "; no worker is drained or deleted until Slurm answers");
  bool scaling = !plan.create.empty() || !plan.drain.empty() || !plan.remove.empty() || st->draining > 0 ||
                 st->replicas != pass.desired;
  SetCondition(&st->conditions, "Scaling", scaling, scaling ? "Converging" : "Stable", plan.decision);
  SetCondition(&st->conditions, "Upgrading", st->outdated > 0, st->outdated > 0 ? "RollingUpgrade" : "OneImage",
               st->outdated == 0 ? ""
                                 : fmt::format("{} worker(s) on an image before {}: each is drained and removed once "
                                               "its jobs end, new workers take the queue{}",
                                               st->outdated, wanted.substr(0, wanted.find('@')),
                                               controller_current_ ? "" : " once slurmctld runs the new release"));
  SetCondition(&st->conditions, "WorkersHealthy", st->unhealthy == 0, st->unhealthy == 0 ? "ChecksPass" : "Unhealthy",
               st->unhealthy == 0 ? ""
                                  : fmt::format("{} worker(s) drained by a health check or by Slurm for a fault; "
                                                "each is removed once it runs nothing and has been drained for {}s",
                                                st->unhealthy, c.spec.health_checks.replace_after_seconds));
  bool ready = visible && st->ready == pass.desired && st->draining == 0 && errors.empty();
  std::string msg = errors.empty() ? fmt::format("{}/{} workers ready", st->ready, pass.desired) : errors.front();
  if (errors.empty() && st->unhealthy > 0) msg += fmt::format("; {} drained as unhealthy", st->unhealthy);
  SetCondition(&st->conditions, "Ready", ready, ready ? "WorkersReady" : "NotReady", msg);
}

void NodeSetReconciler::ResetRestartedWorkers(const api::NodeSet& ns, const std::vector<runtime::PodStatus>& pods,
                                              std::map<std::string, slurm::SlurmNode>* nodes, api::NodeSetStatus* st,
                                              std::vector<std::string>* errors) {
  for (const auto& p : pods) {
    auto [seen, first] = restarts_seen_.try_emplace(p.name, p.restarts);
    const bool restarted = !first && p.restarts > seen->second;
    seen->second = p.restarts;
    auto it = nodes->find(p.name);
    if (!restarted || it == nodes->end() || !it->second.Busy()) continue;
    auto& n = it->second;
    if (n.Drain() && n.reason.rfind(slurm::kDrainReasonPrefix, 0) != 0) {
      AddEvent(
          st, "Warning", "WorkerRestarted",
          fmt::format("worker {} restarted while Slurm counts a job on it; left to the admin who drained it", p.name));
      continue;
    }
    Status s = control_->ResetNode(
        p.name, fmt::format("{} worker pod restarted; its jobs ended with it", slurm::kDrainReasonPrefix));
    if (!s.ok()) {
      errors->push_back(s.message());
      continue;
    }
    std::string msg = fmt::format(
        "worker {} restarted and its jobs with it; set DOWN and resumed so Slurm ends "
        "(and requeues) the jobs it still counted there",
        p.name);
    AddEvent(st, "Warning", "WorkerRestarted", msg);
    spdlog::warn("nodeset {}: {}", ns.metadata.name, msg);
    n.state = "idle";
    n.alloc_cpus = 0;
    n.flags.erase("DRAIN");
    n.reason.clear();
  }
  // Forget pods that are gone, so the map stays the size of the workers.
  for (auto it = restarts_seen_.begin(); it != restarts_seen_.end();) {
    bool mine = WorkerOrdinal(ns, it->first) >= 0;
    bool present = std::any_of(pods.begin(), pods.end(), [&](const auto& p) { return p.name == it->first; });
    it = mine && !present ? restarts_seen_.erase(it) : std::next(it);
  }
}

std::set<std::string> NodeSetReconciler::RestartUnregisteredWorkers(
    const api::NodeSet& ns, const std::vector<runtime::PodStatus>& pods,
    const std::map<std::string, slurm::SlurmNode>& nodes, int64_t now, api::NodeSetStatus* st,
    std::vector<std::string>* errors) {
  std::set<std::string> restarted;
  for (const auto& p : pods) {
    const bool lost = p.phase == runtime::PodPhase::kRunning && p.ready && !nodes.count(p.name);
    if (!lost) {
      unregistered_since_.erase(p.name);
      continue;
    }
    auto [since, first] = unregistered_since_.try_emplace(p.name, now);
    const int64_t missing_for = now - since->second;
    if (missing_for < unregistered_grace_) continue;
    if (Status s = rt_->DeletePod(p.name); !s.ok()) {
      errors->push_back(s.message());
      continue;
    }
    unregistered_since_.erase(since);
    restarted.insert(p.name);
    std::string msg = fmt::format(
        "worker {} has run for {}s without a node in Slurm (slurmctld restarted from state saved before it "
        "registered); its pod is deleted and the nodeset starts it again",
        p.name, missing_for);
    AddEvent(st, "Warning", "WorkerUnregistered", msg);
    spdlog::warn("nodeset {}: {}", ns.metadata.name, msg);
  }
  // Forget pods that are gone.
  for (auto it = unregistered_since_.begin(); it != unregistered_since_.end();) {
    bool mine = WorkerOrdinal(ns, it->first) >= 0;
    bool present = std::any_of(pods.begin(), pods.end(), [&](const auto& p) { return p.name == it->first; });
    it = mine && !present ? unregistered_since_.erase(it) : std::next(it);
  }
  return restarted;
}

std::set<std::string> NodeSetReconciler::ReplaceLostWorkers(const api::NodeSet& ns,
                                                            const std::vector<runtime::PodStatus>& pods,
                                                            const std::map<std::string, slurm::SlurmNode>& nodes,
                                                            int64_t now, api::NodeSetStatus* st,
                                                            std::vector<std::string>* errors) {
  std::set<std::string> lost;
  for (const auto& p : pods) {
    auto it = nodes.find(p.name);
    if (p.ready || it == nodes.end() || !it->second.Lost()) continue;
    lost.insert(p.name);
    std::string msg;
    if (p.delete_by == 0) {
      if (Status s = rt_->DeletePod(p.name); !s.ok()) {
        errors->push_back(s.message());
        continue;
      }
      msg = fmt::format(
          "worker {} is lost: Slurm set it DOWN ({}) and its pod is not ready; its pod is deleted and another "
          "worker takes its place",
          p.name, it->second.reason.empty() ? "not responding" : it->second.reason);
    } else if (now >= p.delete_by + kLostPodForgetAfterSeconds) {
      if (Status s = rt_->ForgetPod(p.name); !s.ok()) {
        errors->push_back(s.message());
        continue;
      }
      msg = fmt::format(
          "worker {}'s machine has not confirmed its pod's deletion {}s after the grace period; the pod is "
          "forgotten (its machine is gone)",
          p.name, now - p.delete_by);
    }
    if (msg.empty()) continue;
    AddEvent(st, "Warning", "WorkerLost", msg);
    spdlog::warn("nodeset {}: {}", ns.metadata.name, msg);
  }
  return lost;
}

void NodeSetReconciler::RegisterWorkersAgain(const api::NodeSet& ns, const std::vector<runtime::PodStatus>& pods,
                                             const std::map<std::string, slurm::SlurmNode>& nodes, int64_t now,
                                             api::NodeSetStatus* st) {
  const int64_t started = controller_started_at_;
  auto handled = registered_again_for_.try_emplace(ns.metadata.name, 0).first;
  if (started <= 0 || handled->second == started || now - started < kRegisterAgainAfterSeconds) return;
  // A nodeset seen for the first time long after slurmctld started needs nothing: its workers
  // registered with this slurmctld, or Slurm already caught up.
  const bool fresh_restart = now - started < 3 * kRegisterAgainAfterSeconds;
  handled->second = started;
  if (!fresh_restart) return;
  int signalled = 0;
  for (const auto& p : pods) {
    if (p.phase != runtime::PodPhase::kRunning || !p.ready || !nodes.count(p.name)) continue;
    // Started after this slurmctld: it registered with it already. A SIGHUP would only pause its
    // launches while slurmd reconfigures (a busy worker lost seconds of throughput to it).
    if (p.started_at > started) continue;
    runtime::ExecOptions o;
    // Slurm 23.11 on re-executes itself on SIGHUP through /proc/self/exe, under Debian's real
    // name (slurmd-wlm, which /usr/sbin/slurmd points to through alternatives).
    o.argv = {"pkill", "-HUP", "-x", slurm::kSlurmdProcessPattern};
    o.timeout = std::chrono::seconds(10);
    auto r = rt_->Exec(p.name, o);
    if (r.ok() && r->exit_code == 0)
      ++signalled;
    else
      spdlog::warn("nodeset {}: could not ask slurmd in {} to register again", ns.metadata.name, p.name);
  }
  if (signalled > 0) {
    std::string msg = fmt::format(
        "slurmctld restarted; {} worker(s) asked to register again, so it learns which "
        "jobs still run there",
        signalled);
    AddEvent(st, "Normal", "RegisteredAgain", msg);
    spdlog::info("nodeset {}: {}", ns.metadata.name, msg);
  }
}

namespace {

// What the health policy needs to know of a worker, from its Slurm node.
HealthWorker HealthWorkerOf(const runtime::PodStatus& pod, const slurm::SlurmNode& n) {
  HealthWorker w;
  w.pod = pod.name;
  w.started_at = pod.started_at;
  w.busy = n.Busy();
  w.drained = n.Drain();
  w.drained_by_health = n.Drain() && IsHealthDrain(n.reason);
  w.gpu_fault = w.drained_by_health && IsGpuHealthDrain(n.reason);
  w.responding = n.Usable();
  w.drained_by_slurm = slurm::IsSlurmFaultDrain(n);
  w.reason_changed_at = n.reason_changed_at;
  w.report = slurm::ParseHealthReport(n.extra);
  return w;
}

}  // namespace

std::set<std::string> NodeSetReconciler::ApplyHealth(const api::SlurmCluster& c, const api::NodeSet& ns,
                                                     const std::vector<runtime::PodStatus>& pods,
                                                     std::map<std::string, slurm::SlurmNode>* nodes, int64_t now,
                                                     api::NodeSetStatus* st, std::vector<std::string>* errors) {
  const auto& hc = c.spec.health_checks;
  std::vector<HealthWorker> workers;
  for (const auto& p : pods) {
    auto it = nodes->find(p.name);
    if (it == nodes->end()) continue;
    workers.push_back(HealthWorkerOf(p, it->second));
  }
  auto& history = replaced_[ns.metadata.name];
  while (!history.empty() && history.front() <= now - 3600) history.pop_front();
  HealthOptions opts;
  opts.enabled = hc.enabled;
  opts.max_unhealthy = hc.MaxUnhealthy(static_cast<int>(pods.size()));
  opts.replace_after_seconds = hc.replace_after_seconds;
  opts.stale_after_seconds = StaleReportAfter(c);
  opts.replacements_left = std::max(0, hc.max_replacements_per_hour - static_cast<int>(history.size()));
  opts.now = now;
  HealthPlan plan = PlanHealth(workers, opts);

  auto note = [&](const std::string& type, const std::string& reason, const std::string& msg) {
    AddEvent(st, type, reason, msg);
    if (type == "Warning")
      spdlog::warn("nodeset {}: {}", ns.metadata.name, msg);
    else
      spdlog::info("nodeset {}: {}", ns.metadata.name, msg);
  };
  for (const auto& d : plan.drain) {
    Status s = control_->DrainNode(d.pod, d.reason);
    if (!s.ok()) {
      errors->push_back(s.message());
      continue;
    }
    auto& n = (*nodes)[d.pod];
    n.flags.insert("DRAIN");
    n.reason = d.reason;
    n.reason_changed_at = now;
    ++st->health_drains;
    // The reason, not the report: a stale worker's last report may be a pass.
    note("Warning", "Unhealthy",
         fmt::format("worker {} failed its health check ({}); drained", d.pod,
                     d.reason.substr(std::string(slurm::kHealthDrainPrefix).size())));
  }
  for (const auto& pod : plan.resume) {
    Status s = control_->ResumeNode(pod);
    if (!s.ok()) {
      errors->push_back(s.message());
      continue;
    }
    auto& n = (*nodes)[pod];
    n.flags.erase("DRAIN");
    n.reason.clear();
    note("Normal", "Healthy",
         hc.enabled ? fmt::format("worker {} passes its health checks again; resumed", pod)
                    : fmt::format("worker {} resumed: health checks are turned off", pod));
  }
  std::set<std::string> replaced;
  for (const auto& pod : plan.replace) {
    const int64_t drained_for = now - (*nodes)[pod].reason_changed_at;
    // As a scale-down removes a worker: the pod first, then Slurm's node record.
    Status s = rt_->DeletePod(pod);
    if (s.ok()) s = control_->DeleteNode(pod);
    if (!s.ok()) {
      errors->push_back(s.message());
      continue;
    }
    const std::string& reason = (*nodes)[pod].reason;
    std::string by = IsHealthDrain(reason) ? fmt::format("by a health check ({})",
                                                         reason.substr(std::string(slurm::kHealthDrainPrefix).size()))
                                           : fmt::format("by Slurm ({})", reason);
    nodes->erase(pod);
    replaced.insert(pod);
    history.push_back(now);
    ++st->replacements;
    note("Normal", "Replaced",
         fmt::format("worker {} was drained {} for {}s and runs nothing; removed, the nodeset brings its capacity back",
                     pod, by, drained_for));
  }
  const bool suspect = !plan.held_back.empty();
  std::string suspect_msg;
  if (suspect) {
    suspect_msg = fmt::format(
        "{} more worker(s) fail health checks ({}) but {} of {} are drained already, the most maxUnhealthy ({}) "
        "allows: the check itself may be wrong; they stay in service",
        plan.held_back.size(), plan.held_back_detail, plan.unhealthy, pods.size(), hc.max_unhealthy);
    note("Warning", "HealthCheckSuspect", suspect_msg);
  }
  SetCondition(&st->conditions, "HealthChecksSuspect", suspect, suspect ? "TooManyUnhealthy" : "WithinLimit",
               suspect_msg);
  return replaced;
}

void NodeSetReconciler::RepairStuckNodes(const api::NodeSet& ns, std::map<std::string, slurm::SlurmNode>* nodes,
                                         int64_t now, api::NodeSetStatus* st) {
  auto& seen = stuck_since_[ns.metadata.name];
  std::map<std::string, int64_t> still;
  for (auto& [name, n] : *nodes) {
    if (!n.features.count(ns.metadata.name) || !n.StuckAllocated()) continue;
    if (n.Drain() && n.reason.rfind(slurm::kDrainReasonPrefix, 0) != 0) continue;  // an admin's drain stays
    int64_t since = seen.count(name) ? seen[name] : now;
    still[name] = since;
    if (!n.Drain()) {
      // Drained first, so nothing new lands on it before it is reset.
      (void)control_->DrainNode(name, fmt::format("{} clearing a stale allocation", slurm::kDrainReasonPrefix));
      continue;
    }
    if (now - since < 2) continue;  // seen stuck and drained on two passes
    Status s = control_->ResetNode(name, fmt::format("{} clearing a stale allocation", slurm::kDrainReasonPrefix));
    std::string msg = s.ok()
                          ? fmt::format("worker {} was left allocated with no job (Slurm reconfigure); reset it", name)
                          : s.message();
    AddEvent(st, s.ok() ? "Normal" : "Warning", "StaleAllocation", msg);
    spdlog::warn("nodeset {}: {}", ns.metadata.name, msg);
    if (s.ok()) {
      n.state = "idle";
      n.alloc_cpus = 0;
      n.flags.erase("DRAIN");
      n.reason.clear();
      still.erase(name);
    }
  }
  seen = std::move(still);
}

Status NodeSetReconciler::RemoveNodeSet(const api::SlurmCluster& c, const api::NodeSet& ns,
                                        slurm::SlurmReader* reader) {
  api::NodeSet gone = ns;
  gone.spec.replicas = 0;
  gone.spec.min_replicas = 0;
  api::NodeSetStatus st = Reconcile(c, gone, reader, nullptr);
  if (st.replicas > 0) {
    return Status::FailedPrecondition(
        fmt::format("nodeset {}: {} workers still draining", ns.metadata.name, st.replicas));
  }
  return Status::Ok();
}

}  // namespace hpc::op
