#include "operator/daemon_metrics.h"

#include <prometheus/text_serializer.h>

#include <algorithm>

namespace hpc::op {

DaemonMetrics::DaemonMetrics()
    : registry_(std::make_shared<prometheus::Registry>()),
      desired_(prometheus::BuildGauge()
                   .Name("hpcplane_nodeset_desired_replicas")
                   .Help("Workers the autoscaler wants, per nodeset")
                   .Register(*registry_)),
      pods_(prometheus::BuildGauge()
                .Name("hpcplane_nodeset_pods")
                .Help("Worker pods that exist, per nodeset")
                .Register(*registry_)),
      nodes_(prometheus::BuildGauge()
                 .Name("hpcplane_nodeset_nodes")
                 .Help("Workers by state in Slurm (ready, busy, idle, draining, unhealthy), per nodeset")
                 .Register(*registry_)),
      decisions_(prometheus::BuildCounter()
                     .Name("hpcplane_scale_decisions_total")
                     .Help("Changes of a nodeset's desired replicas, by direction (up, down)")
                     .Register(*registry_)),
      health_drains_(prometheus::BuildCounter()
                         .Name("hpcplane_health_check_drains_total")
                         .Help("Workers drained because a health check failed, per nodeset")
                         .Register(*registry_)),
      replacements_(prometheus::BuildCounter()
                        .Name("hpcplane_worker_replacements_total")
                        .Help("Workers removed after a health check drained them past replaceAfter, per nodeset")
                        .Register(*registry_)),
      reconcile_errors_(prometheus::BuildCounter()
                            .Name("hpcplane_reconcile_errors_total")
                            .Help("Failed steps of reconcile passes, per resource kind (cluster, nodeset)")
                            .Register(*registry_)),
      pod_restarts_(prometheus::BuildCounter()
                        .Name("hpcplane_pod_restarts_total")
                        .Help("Restarts of pods (their process died or a liveness probe failed), per component")
                        .Register(*registry_)),
      pending_(prometheus::BuildGauge()
                   .Name("hpcplane_pending_jobs")
                   .Help("Pending jobs per partition and Slurm's reason")
                   .Register(*registry_)),
      start_wait_(prometheus::BuildHistogram()
                      .Name("hpcplane_job_start_wait_seconds")
                      .Help("Time from a job's submission to its start (cold starts included)")
                      .Register(*registry_)
                      .Add({}, prometheus::Histogram::BucketBoundaries{0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 900})),
      pass_duration_(
          prometheus::BuildHistogram()
              .Name("hpcplane_reconcile_pass_duration_seconds")
              .Help("Time of one reconcile pass")
              .Register(*registry_)
              .Add({}, prometheus::Histogram::BucketBoundaries{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10})),
      gpu_utilization_(prometheus::BuildGauge()
                           .Name("hpcplane_gpu_utilization_ratio")
                           .Help("A worker GPU's utilisation (0-1) at its last health check, per nodeset, node and GPU")
                           .Register(*registry_)),
      gpu_memory_used_(prometheus::BuildGauge()
                           .Name("hpcplane_gpu_memory_used_bytes")
                           .Help("A worker GPU's memory in use at its last health check")
                           .Register(*registry_)),
      gpu_memory_total_(prometheus::BuildGauge()
                            .Name("hpcplane_gpu_memory_total_bytes")
                            .Help("A worker GPU's memory")
                            .Register(*registry_)),
      gpu_temperature_(prometheus::BuildGauge()
                           .Name("hpcplane_gpu_temperature_celsius")
                           .Help("A worker GPU's temperature at its last health check")
                           .Register(*registry_)) {}

void DaemonMetrics::ObserveNodeSets(const std::vector<NodeSetView>& nodesets, const std::vector<slurm::SlurmJob>* jobs,
                                    const std::set<std::string>& workspace_partitions) {
  std::lock_guard<std::mutex> l(mu_);
  struct Sum {
    int desired = 0, pods = 0, ready = 0, busy = 0, idle = 0, draining = 0, unhealthy = 0;
  };
  std::map<std::string, Sum> sums;
  for (const auto& n : nodesets) {
    if (!n.status) continue;
    const std::string label = n.workspace ? "workspaces" : n.name;
    Sum& s = sums[label];
    s.desired += n.status->desired, s.pods += n.status->replicas, s.ready += n.status->ready;
    s.busy += n.status->busy, s.idle += n.status->idle, s.draining += n.status->draining;
    s.unhealthy += n.status->unhealthy;
    const Seen now{n.status->desired, n.status->health_drains, n.status->replacements};
    auto [it, first] = last_seen_.try_emplace(n.name, now);
    Seen& before = it->second;
    // A decision is a change of what the autoscaler wants.
    if (!first && before.desired != now.desired) {
      decisions_.Add({{"nodeset", label}, {"direction", now.desired > before.desired ? "up" : "down"}}).Increment();
    }
    // Added (at 0) on first sight, so a query sees the series before its first increment.
    auto& drains = health_drains_.Add({{"nodeset", label}});
    auto& replaced = replacements_.Add({{"nodeset", label}});
    if (!first && now.health_drains > before.health_drains) {
      drains.Increment(static_cast<double>(now.health_drains - before.health_drains));
    }
    if (!first && now.replacements > before.replacements) {
      replaced.Increment(static_cast<double>(now.replacements - before.replacements));
    }
    before = now;
  }
  // Forget nodesets that are gone (stopped workspaces), so the map stays the size of the cluster.
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    bool present =
        std::any_of(nodesets.begin(), nodesets.end(), [&](const NodeSetView& n) { return n.name == it->first; });
    it = present ? std::next(it) : last_seen_.erase(it);
  }
  for (const auto& [label, s] : sums) {
    desired_.Add({{"nodeset", label}}).Set(s.desired);
    pods_.Add({{"nodeset", label}}).Set(s.pods);
    for (const auto& [state, v] : std::map<std::string, int>{{"ready", s.ready},
                                                             {"busy", s.busy},
                                                             {"idle", s.idle},
                                                             {"draining", s.draining},
                                                             {"unhealthy", s.unhealthy}}) {
      nodes_.Add({{"nodeset", label}, {"state", state}}).Set(v);
    }
  }
  if (!jobs) return;  // Slurm's queue unknown: the last values stand
  std::map<std::pair<std::string, std::string>, int> pending;
  std::set<int64_t> listed;
  for (const auto& j : *jobs) {
    const std::string partition = workspace_partitions.count(j.partition) ? "workspaces" : j.partition;
    if (j.state == "PENDING") ++pending[{partition, j.reason.empty() ? "None" : j.reason}];
    listed.insert(j.job_id);
    // Started: running, or already finished (a short job may never be seen running), once each.
    if (j.state != "PENDING" && j.start_time > 0 && j.submit_time > 0 && started_.insert(j.job_id).second) {
      start_wait_.Observe(static_cast<double>(std::max<int64_t>(0, j.start_time - j.submit_time)));
    }
  }
  // Forget jobs Slurm no longer lists, so the set stays the size of the queue.
  for (auto it = started_.begin(); it != started_.end();) it = listed.count(*it) ? std::next(it) : started_.erase(it);
  for (const auto& key : pending_labels_) {
    if (!pending.count(key)) pending_.Add({{"partition", key.first}, {"reason", key.second}}).Set(0);
  }
  for (const auto& [key, n] : pending) {
    pending_.Add({{"partition", key.first}, {"reason", key.second}}).Set(n);
    pending_labels_.insert(key);
  }
}

void DaemonMetrics::ObserveGpus(const std::vector<GpuWorkerView>& workers) {
  std::lock_guard<std::mutex> l(mu_);
  constexpr double kMiB = 1024.0 * 1024.0;
  std::set<std::map<std::string, std::string>> now;
  for (const auto& w : workers) {
    for (const auto& g : w.gpus) {
      std::map<std::string, std::string> labels{{"nodeset", w.nodeset}, {"node", w.node}, {"gpu", g.bus_id}};
      if (!now.insert(labels).second) continue;  // one series per GPU
      // A value nvidia-smi did not have leaves no series, rather than a made-up zero.
      auto set = [&](prometheus::Family<prometheus::Gauge>& family, bool known, double value) {
        if (known)
          family.Add(labels).Set(value);
        else if (family.Has(labels))
          family.Remove(&family.Add(labels));
      };
      set(gpu_utilization_, g.utilization_percent >= 0, g.utilization_percent / 100.0);
      set(gpu_memory_used_, g.memory_used_mib >= 0, static_cast<double>(g.memory_used_mib) * kMiB);
      set(gpu_memory_total_, g.memory_total_mib >= 0, static_cast<double>(g.memory_total_mib) * kMiB);
      set(gpu_temperature_, g.temperature_celsius >= 0, g.temperature_celsius);
    }
  }
  for (const auto& labels : gpu_labels_) {
    if (now.count(labels)) continue;
    for (auto* family : {&gpu_utilization_, &gpu_memory_used_, &gpu_memory_total_, &gpu_temperature_}) {
      if (family->Has(labels)) family->Remove(&family->Add(labels));
    }
  }
  gpu_labels_ = std::move(now);
}

void DaemonMetrics::ObservePass(double seconds) { pass_duration_.Observe(seconds); }

void DaemonMetrics::ObserveReconcileErrors(const std::string& resource, int errors) {
  std::lock_guard<std::mutex> l(mu_);
  auto& counter = reconcile_errors_.Add({{"resource", resource}});
  if (errors > 0) counter.Increment(errors);
}

void DaemonMetrics::ObservePods(const std::vector<runtime::PodStatus>& pods) {
  std::lock_guard<std::mutex> l(mu_);
  std::map<std::string, int> now;
  for (const auto& p : pods) {
    auto it = p.labels.find("hpcplane.io/component");
    const std::string component = it == p.labels.end() ? "other" : it->second;
    auto& counter = pod_restarts_.Add({{"component", component}});
    auto seen = restarts_seen_.find(p.name);
    // A pod seen for the first time brings its count; one recreated under the same name starts over.
    int before = seen == restarts_seen_.end() || seen->second > p.restarts ? 0 : seen->second;
    if (p.restarts > before) counter.Increment(p.restarts - before);
    now[p.name] = p.restarts;
  }
  restarts_seen_ = std::move(now);  // pods that are gone are forgotten
}

std::string DaemonMetrics::Render() {
  std::lock_guard<std::mutex> l(mu_);
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace hpc::op
