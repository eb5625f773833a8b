// Benchmark: one full autoscaling decision over 100,000 pending jobs across 100 nodesets
// (synthetic, in-process): group the queue by partition once, then pack each nodeset's jobs.
// Peer in the same run: the same decision scanning the whole queue once per nodeset.
// Target: one full decision <= 50 ms.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "operator/demand.h"

using hpc::op::ComputeDemand;
using hpc::op::GroupPending;
using hpc::op::NodeShape;
using Clock = std::chrono::steady_clock;

static std::vector<hpc::slurm::SlurmJob> SyntheticQueue(int jobs, int partitions) {
  std::mt19937 rng(42);
  const char* reasons[] = {"Resources", "Priority", "PartitionConfig", "JobHeldUser", "Dependency", "None"};
  std::vector<hpc::slurm::SlurmJob> q(jobs);
  for (int i = 0; i < jobs; ++i) {
    auto& j = q[i];
    j.job_id = i + 1;
    j.state = "PENDING";
    j.reason = reasons[rng() % 6];
    j.partition = "ns" + std::to_string(rng() % partitions);
    j.node_count = 1 + (rng() % 10 == 0 ? rng() % 4 : 0);
    j.cpus = j.node_count * (1 + rng() % 8);
    j.min_cpus_per_node = j.cpus / j.node_count;
    j.memory_per_node = (rng() % 4) * 1000;
    j.exclusive = rng() % 20 == 0;
    if (rng() % 50 == 0) j.array_task_string = "1-" + std::to_string(2 + rng() % 50);
  }
  return q;
}

template <typename F>
static std::vector<double> Time(int reps, F&& f) {
  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    f();
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms;
}

int main() {
  const int kJobs = 100000, kNodeSets = 100, kReps = 15;
  auto queue = SyntheticQueue(kJobs, kNodeSets);
  const NodeShape shape{16, 64000, 0};
  long needed = 0;
  auto grouped = Time(kReps, [&] {
    auto pending = GroupPending(queue);
    for (int n = 0; n < kNodeSets; ++n) {
      auto it = pending.find("ns" + std::to_string(n));
      if (it != pending.end()) needed += ComputeDemand(it->second, shape, 128, 128).nodes_needed;
    }
  });
  auto naive = Time(3, [&] {
    for (int n = 0; n < kNodeSets; ++n)
      needed += ComputeDemand(queue, "ns" + std::to_string(n), shape, 128, 128).nodes_needed;
  });
  auto p = [](const std::vector<double>& v, double q) { return v[std::min(v.size() - 1, size_t(q * v.size()))]; };
  std::printf("decision cost: %d pending jobs, %d nodesets (checksum %ld)\n", kJobs, kNodeSets, needed);
  std::printf("  hpcplane (grouped once)      p50 %8.2f ms  p95 %8.2f ms  (%d runs)\n", p(grouped, 0.5),
              p(grouped, 0.95), kReps);
  std::printf("  peer (full scan per nodeset) p50 %8.2f ms                   (3 runs)\n", p(naive, 0.5));
  std::printf("  ratio hpcplane/peer          %.3f   target: hpcplane p50 <= 50 ms\n", p(grouped, 0.5) / p(naive, 0.5));
  return 0;
}
