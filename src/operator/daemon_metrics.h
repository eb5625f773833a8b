// The data plane daemon's Prometheus metrics (`up --metrics-listen`): per nodeset the desired
// replicas, worker pods and Slurm nodes by state, scale decisions, health check drains and
// worker replacements, pending jobs per partition
// by reason, how long jobs waited to start, reconcile pass durations, and each cluster worker's
// GPUs as its last health report saw them (utilisation, memory, temperature). Workspaces' nodesets
// and partitions (named after their users) are summed under "workspaces": labels stay bounded
// and carry no user names.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "api/types.h"
#include "runtime/pod_runtime.h"
#include "slurm/health_check.h"
#include "slurm/slurm_client.h"

namespace hpc::op {

class DaemonMetrics {
 public:
  DaemonMetrics();

  struct NodeSetView {
    std::string name;
    bool workspace = false;
    const api::NodeSetStatus* status = nullptr;
  };
  // What one pass saw: every nodeset's status, and Slurm's job list (null when unknown).
  void ObserveNodeSets(const std::vector<NodeSetView>& nodesets, const std::vector<slurm::SlurmJob>* jobs,
                       const std::set<std::string>& workspace_partitions);
  // Every worker of a (non-workspace) nodeset with the GPUs its last health report listed; GPUs
  // no longer listed lose their series.
  struct GpuWorkerView {
    std::string nodeset;
    std::string node;
    std::vector<slurm::GpuSample> gpus;
  };
  void ObserveGpus(const std::vector<GpuWorkerView>& workers);
  void ObservePass(double seconds);
  // Failures of one reconcile of a resource ("cluster", "nodeset") in this pass.
  void ObserveReconcileErrors(const std::string& resource, int errors);
  // Every pod with its restart count: restarts are counted per component.
  void ObservePods(const std::vector<runtime::PodStatus>& pods);
  std::string Render();

 private:
  std::mutex mu_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>& desired_;
  prometheus::Family<prometheus::Gauge>& pods_;
  prometheus::Family<prometheus::Gauge>& nodes_;
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Counter>& health_drains_;
  prometheus::Family<prometheus::Counter>& replacements_;
  prometheus::Family<prometheus::Counter>& reconcile_errors_;
  prometheus::Family<prometheus::Counter>& pod_restarts_;
  std::map<std::string, int> restarts_seen_;  // pod -> its restart count at the last pass
  prometheus::Family<prometheus::Gauge>& pending_;
  prometheus::Histogram& start_wait_;
  prometheus::Histogram& pass_duration_;
  prometheus::Family<prometheus::Gauge>& gpu_utilization_;
  prometheus::Family<prometheus::Gauge>& gpu_memory_used_;
  prometheus::Family<prometheus::Gauge>& gpu_memory_total_;
  prometheus::Family<prometheus::Gauge>& gpu_temperature_;
  std::set<std::map<std::string, std::string>> gpu_labels_;  // the GPU series now exported
  // Per nodeset, what the last pass saw: counters grow by the difference.
  struct Seen {
    int desired = 0;
    int64_t health_drains = 0;
    int64_t replacements = 0;
  };
  std::map<std::string, Seen> last_seen_;
  std::set<std::pair<std::string, std::string>> pending_labels_;  // reset to 0 when they empty
  std::set<int64_t> started_;                                     // jobs whose start wait was observed
};

}  // namespace hpc::op
