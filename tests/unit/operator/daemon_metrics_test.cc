// The data plane daemon's metrics: decisions counted on changes only, workspaces summed under
// one label (no user names as labels), pending counts going back to zero, start waits once a job.
#include "operator/daemon_metrics.h"

#include <gtest/gtest.h>

namespace hpc::op {
namespace {

slurm::SlurmJob Job(int64_t id, const std::string& partition, const std::string& state, int64_t submit, int64_t start) {
  slurm::SlurmJob j;
  j.job_id = id;
  j.partition = partition;
  j.state = state;
  j.reason = state == "PENDING" ? "Resources" : "";
  j.submit_time = submit;
  j.start_time = start;
  return j;
}

bool Has(const std::string& text, const std::string& line) { return text.find(line + "\n") != std::string::npos; }

TEST(DaemonMetrics, CountsDecisionsSumsWorkspacesAndResetsPendingCounts) {
  DaemonMetrics m;
  api::NodeSetStatus cpu, ann, ben;
  cpu.desired = 0;
  ann.desired = 1, ann.replicas = 1, ann.busy = 1;
  ben.desired = 2, ben.replicas = 1, ben.idle = 1;
  std::vector<DaemonMetrics::NodeSetView> views = {
      {"cpu", false, &cpu}, {"ann-astro", true, &ann}, {"ben-bio", true, &ben}};
  std::vector<slurm::SlurmJob> jobs = {Job(1, "cpu", "PENDING", 100, 0), Job(2, "ann-astro", "PENDING", 100, 0),
                                       Job(3, "ben-bio", "RUNNING", 100, 103)};
  m.ObserveNodeSets(views, &jobs, {"ann-astro", "ben-bio"});
  std::string t = m.Render();
  EXPECT_TRUE(Has(t, R"(hpcplane_nodeset_desired_replicas{nodeset="workspaces"} 3)")) << t;
  EXPECT_TRUE(Has(t, R"(hpcplane_nodeset_pods{nodeset="workspaces"} 2)")) << t;
  EXPECT_EQ(t.find("ann-astro"), std::string::npos) << "no user's workspace name as a label";
  EXPECT_TRUE(Has(t, R"(hpcplane_pending_jobs{partition="cpu",reason="Resources"} 1)")) << t;
  EXPECT_TRUE(Has(t, R"(hpcplane_pending_jobs{partition="workspaces",reason="Resources"} 1)")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_job_start_wait_seconds_count 1")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_job_start_wait_seconds_sum 3")) << t;

  // cpu scales up; the pending job starts; the same running job is not observed twice.
  cpu.desired = 2;
  jobs = {Job(1, "cpu", "COMPLETED", 100, 110), Job(3, "ben-bio", "RUNNING", 100, 103)};
  m.ObserveNodeSets(views, &jobs, {"ann-astro", "ben-bio"});
  cpu.desired = 0;
  m.ObserveNodeSets(views, &jobs, {"ann-astro", "ben-bio"});
  m.ObserveNodeSets(views, nullptr, {"ann-astro", "ben-bio"});  // an unknown queue changes no job metric
  t = m.Render();
  EXPECT_TRUE(Has(t, R"(hpcplane_scale_decisions_total{direction="up",nodeset="cpu"} 1)")) << t;
  EXPECT_TRUE(Has(t, R"(hpcplane_scale_decisions_total{direction="down",nodeset="cpu"} 1)")) << t;
  EXPECT_TRUE(Has(t, R"(hpcplane_pending_jobs{partition="cpu",reason="Resources"} 0)")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_job_start_wait_seconds_count 2")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_job_start_wait_seconds_sum 13")) << t;
}

// Health drains and replacements count what the statuses gained; pod restarts are summed per
// component, and a pod recreated under the same name starts over; reconcile errors per kind.
TEST(DaemonMetrics, CountsHealthDrainsReplacementsRestartsAndErrors) {
  DaemonMetrics m;
  api::NodeSetStatus cpu;
  cpu.health_drains = 3;  // from before this daemon: not counted again
  m.ObserveNodeSets({{"cpu", false, &cpu}}, nullptr, {});
  cpu.health_drains = 5, cpu.replacements = 1, cpu.unhealthy = 1;
  m.ObserveNodeSets({{"cpu", false, &cpu}}, nullptr, {});
  auto pod = [](const std::string& name, const std::string& component, int restarts) {
    runtime::PodStatus p;
    p.name = name;
    p.labels = {{"hpcplane.io/component", component}};
    p.restarts = restarts;
    return p;
  };
  m.ObservePods({pod("cpu-0", "worker", 1), pod("c-controller", "controller", 0)});
  m.ObservePods({pod("cpu-0", "worker", 3), pod("c-controller", "controller", 1)});
  m.ObservePods({pod("cpu-0", "worker", 1)});  // deleted and made again: one more restart since
  m.ObserveReconcileErrors("nodeset", 2);
  m.ObserveReconcileErrors("cluster", 0);
  std::string t = m.Render();
  EXPECT_TRUE(Has(t, "hpcplane_health_check_drains_total{nodeset=\"cpu\"} 2")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_worker_replacements_total{nodeset=\"cpu\"} 1")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_nodeset_nodes{nodeset=\"cpu\",state=\"unhealthy\"} 1")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_pod_restarts_total{component=\"worker\"} 4")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_pod_restarts_total{component=\"controller\"} 1")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_reconcile_errors_total{resource=\"nodeset\"} 2")) << t;
  EXPECT_TRUE(Has(t, "hpcplane_reconcile_errors_total{resource=\"cluster\"} 0")) << t;
}

// Each GPU of a worker's last report is a series; a value nvidia-smi did not have is left out,
// and a GPU no longer reported (its worker gone) loses its series.
TEST(DaemonMetrics, ExportsEachWorkerGpuAndForgetsGpusNoLongerReported) {
  DaemonMetrics m;
  slurm::GpuSample busy{"00000000:3b:00.0", 87, 40000, 81559, 61};
  slurm::GpuSample unknown{"00000000:86:00.0", -1, 1, 81559, -1};
  m.ObserveGpus({{"gpu", "gpu-0", {busy, unknown}}});
  std::string t = m.Render();
  EXPECT_TRUE(Has(t, R"(hpcplane_gpu_utilization_ratio{gpu="00000000:3b:00.0",node="gpu-0",nodeset="gpu"} 0.87)")) << t;
  EXPECT_TRUE(
      Has(t, R"(hpcplane_gpu_memory_used_bytes{gpu="00000000:3b:00.0",node="gpu-0",nodeset="gpu"} 41943040000)"))
      << t;
  EXPECT_TRUE(Has(t, R"(hpcplane_gpu_temperature_celsius{gpu="00000000:3b:00.0",node="gpu-0",nodeset="gpu"} 61)")) << t;
  EXPECT_TRUE(Has(t, R"(hpcplane_gpu_memory_used_bytes{gpu="00000000:86:00.0",node="gpu-0",nodeset="gpu"} 1048576)"))
      << t;
  EXPECT_EQ(t.find(R"(hpcplane_gpu_utilization_ratio{gpu="00000000:86:00.0")"), std::string::npos) << t;
  m.ObserveGpus({{"gpu", "gpu-1", {busy}}});
  t = m.Render();
  EXPECT_EQ(t.find(R"(node="gpu-0")"), std::string::npos) << t;
  EXPECT_TRUE(Has(t, R"(hpcplane_gpu_temperature_celsius{gpu="00000000:3b:00.0",node="gpu-1",nodeset="gpu"} 61)")) << t;
}

}  // namespace
}  // namespace hpc::op
