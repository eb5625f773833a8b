#include "operator/nodeset_reconciler.h"

#include <algorithm>
#include <map>

#include <spdlog/spdlog.h>

#include "operator/conditions.h"
#include "operator/scale_down.h"

namespace hpc::op {

int DesiredFromSpec(const api::SlurmCluster& c, const api::NodeSet& ns) {
  int min = ns.MinReplicas(c.spec.min_replica_count);
  int want = ns.spec.replicas.value_or(min);
  return std::clamp(want, min, std::max(min, ns.spec.max_replicas));
}

api::NodeSetStatus NodeSetReconciler::Reconcile(const api::SlurmCluster& c, const api::NodeSet& ns, int desired,
                                                slurm::SlurmReader* reader) {
  api::NodeSetStatus st = ns.status;
  st.desired = desired;
  st.observed_generation = ns.metadata.generation;

  auto pods = rt_->ListPods({{kLabelCluster, c.metadata.name}, {kLabelNodeSet, ns.metadata.name}});
  if (!pods.ok()) {
    SetCondition(&st.conditions, "Ready", false, "RuntimeError", pods.status().message());
    return st;
  }
  std::map<std::string, slurm::SlurmNode> nodes;
  bool visible = false;
  std::string slurm_error = "slurmrestd is not ready";
  if (reader) {
    auto listed = reader->Nodes();
    if (listed.ok()) {
      visible = true;
      for (auto& n : *listed) nodes[n.name] = n;
    } else {
      slurm_error = listed.status().message();
    }
  }

  std::vector<WorkerView> workers;
  for (const auto& p : *pods) {
    WorkerView w;
    w.pod = p.name;
    w.ordinal = WorkerOrdinal(ns, p.name);
    auto it = nodes.find(p.name);
    if (it != nodes.end()) {
      const auto& n = it->second;
      w.registered = true;
      w.busy = n.Busy();
      bool ours = n.reason.rfind(slurm::kDrainReasonPrefix, 0) == 0;
      w.drain_ours = n.Drain() && ours;
      w.drain_admin = n.Drain() && !ours;
    }
    workers.push_back(w);
  }

  ScalePlan plan = PlanScale(workers, desired, visible);
  std::vector<std::string> errors;
  for (const auto& name : plan.resume) {
    Status s = control_->ResumeNode(name);
    if (!s.ok()) errors.push_back(s.message());
  }
  for (int ord : plan.create) {
    Status s = rt_->CreatePod(BuildWorkerPod(c, ns, ord, in_));
    if (!s.ok()) errors.push_back(s.message());
  }
  for (const auto& name : plan.drain) {
    Status s = control_->DrainNode(name, fmt::format("{} scale-down of nodeset {}", slurm::kDrainReasonPrefix,
                                                     ns.metadata.name));
    if (!s.ok()) errors.push_back(s.message());
  }
  for (const auto& name : plan.remove) {
    // Slurm showed this worker drained with no job: the pod goes first, then the node record.
    Status s = rt_->DeletePod(name);
    if (s.ok()) s = control_->DeleteNode(name);
    if (!s.ok()) errors.push_back(s.message());
  }
  // Nodes Slurm still lists for this nodeset whose pod is gone (e.g. removed while hpcplane was
  // down): forget them once they hold no job.
  if (visible) {
    for (const auto& [name, n] : nodes) {
      bool has_pod = std::any_of(pods->begin(), pods->end(), [&](const auto& p) { return p.name == name; });
      if (!has_pod && WorkerOrdinal(ns, name) >= 0 && n.features.count(ns.metadata.name) && !n.Busy()) {
        Status s = control_->DeleteNode(name);
        if (!s.ok()) errors.push_back(s.message());
      }
    }
  }
  if (!plan.decision.empty()) {
    st.last_decision = plan.decision;
    spdlog::info("nodeset {}: {}", ns.metadata.name, plan.decision);
  }
  for (const auto& e : errors) spdlog::error("nodeset {}: {}", ns.metadata.name, e);

  // Counts from what exists after this pass.
  st.replicas = st.ready = st.busy = st.idle = st.draining = 0;
  auto after = rt_->ListPods({{kLabelCluster, c.metadata.name}, {kLabelNodeSet, ns.metadata.name}});
  if (after.ok()) {
    for (const auto& p : *after) {
      ++st.replicas;
      auto it = nodes.find(p.name);
      if (it == nodes.end()) continue;
      const auto& n = it->second;
      bool removed = std::find(plan.remove.begin(), plan.remove.end(), p.name) != plan.remove.end();
      if (removed) continue;
      bool draining = n.Drain() || std::find(plan.drain.begin(), plan.drain.end(), p.name) != plan.drain.end();
      if (draining) ++st.draining;
      else if (n.Usable()) ++st.ready;
      if (n.Busy()) ++st.busy;
      else if (n.Usable()) ++st.idle;
    }
  }
  SetCondition(&st.conditions, "SlurmVisible", visible, visible ? "Answering" : "SlurmUnreachable",
               visible ? "" : slurm_error + "; no worker is drained or deleted until Slurm answers");
  bool scaling = !plan.create.empty() || !plan.drain.empty() || !plan.remove.empty() || st.draining > 0 ||
                 st.replicas != desired;
  SetCondition(&st.conditions, "Scaling", scaling, scaling ? "Converging" : "Stable", plan.decision);
  bool ready = visible && st.ready == desired && st.draining == 0 && errors.empty();
  std::string msg = errors.empty() ? fmt::format("{}/{} workers ready", st.ready, desired) : errors.front();
  SetCondition(&st.conditions, "Ready", ready, ready ? "WorkersReady" : "NotReady", msg);
  return st;
}

Status NodeSetReconciler::RemoveNodeSet(const api::SlurmCluster& c, const api::NodeSet& ns,
                                        slurm::SlurmReader* reader) {
  api::NodeSetStatus st = Reconcile(c, ns, 0, reader);
  if (st.replicas > 0) return Status::Errorf("nodeset {}: {} workers still draining", ns.metadata.name, st.replicas);
  return Status::Ok();
}

}  // namespace hpc::op
