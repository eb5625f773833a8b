// Benchmark: sbatch -> RUNNING on a scaled-to-zero autoscaled nodeset, per trial broken into
//   decision  (sbatch returned -> the worker pod exists: queue poll + reconcile + pod create)
//   start     (pod exists -> Slurm lists the node: namespaces, slurmd start, registration)
//   schedule  (node registered -> job RUNNING: slurmctld's scheduler)
// Polls the runtime and slurmrestd every 5 ms. Usage (cluster up, nodeset autoscaled):
//   bench_cold_start STATE_DIR CLUSTER NODESET TRIALS
#include <cstdio>
#include <random>
#include <thread>

#include "bench_cluster.h"

using namespace hpc;
using bench::Clock;
using bench::Ms;
using bench::Pct;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s STATE_DIR CLUSTER NODESET TRIALS\n", argv[0]);
    return 2;
  }
  const std::string nodeset = argv[3];
  const int trials = std::atoi(argv[4]);
  auto opened = bench::OpenBenchCluster({argv[1], argv[2]}, false);
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.status().message().c_str()), 1;
  auto& b = **opened;
  auto& rest = *b.rest;
  auto workers = [&] { return b.rt->ListPods({{op::kLabelNodeSet, nodeset}}); };

  std::vector<double> decision, start, schedule, total;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> jitter(0, 999);
  for (int t = 0; t < trials; ++t) {
    // Scaled to zero: no pod, and Slurm lists no node of this nodeset.
    auto deadline = Clock::now() + std::chrono::seconds(120);
    for (;;) {
      auto pods = workers();
      auto nodes = rest.Nodes();
      bool zero = pods.ok() && pods->empty() && nodes.ok() &&
                  std::none_of(nodes->begin(), nodes->end(), [&](const auto& n) { return n.features.count(nodeset); });
      if (zero) break;
      if (Clock::now() > deadline) return std::fprintf(stderr, "nodeset did not return to zero\n"), 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    // slurmctld 22.05 starts work on a new node only at its once-a-second scheduler ticks; a trial
    // that begins right after the previous one ended would keep the same phase to them every time.
    // Users submit at any moment: a random delay samples that phase evenly (fixed seed: the same
    // delays in every run).
    std::this_thread::sleep_for(std::chrono::milliseconds(jitter(rng)));
    runtime::ExecOptions o;
    o.user = "alice";
    o.argv = {"sbatch", "--parsable", "-p", nodeset, "-o", "/dev/null", "--wrap", "sleep 1"};
    auto r = b.rt->Exec(op::LoginPodName(b.cluster), o);
    auto t0 = Clock::now();
    if (!r.ok() || r->exit_code != 0)
      return std::fprintf(stderr, "sbatch failed: %s\n", r.ok() ? r->err.c_str() : ""), 1;
    int64_t job = std::atoll(r->out.c_str());
    Clock::time_point t_pod{}, t_reg{}, t_run{};
    while (t_run == Clock::time_point{}) {
      auto now = Clock::now();
      if (now - t0 > std::chrono::seconds(60)) return std::fprintf(stderr, "job %ld did not start\n", long(job)), 1;
      if (t_pod == Clock::time_point{}) {
        auto pods = workers();
        if (pods.ok() && !pods->empty()) t_pod = Clock::now();
      }
      if (t_pod != Clock::time_point{} && t_reg == Clock::time_point{}) {
        auto nodes = rest.Nodes();
        if (nodes.ok() &&
            std::any_of(nodes->begin(), nodes->end(), [&](const auto& n) { return n.features.count(nodeset); })) {
          t_reg = Clock::now();
        }
      }
      auto jobs = rest.Jobs();
      if (jobs.ok()) {
        for (const auto& j : *jobs) {
          if (j.job_id == job && j.state == "RUNNING" && !j.configuring) t_run = Clock::now();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    // A phase shorter than one poll round is attributed to the next one.
    if (t_reg == Clock::time_point{}) t_reg = t_run;
    if (t_pod == Clock::time_point{}) t_pod = t_reg;
    decision.push_back(Ms(t0, t_pod));
    start.push_back(Ms(t_pod, t_reg));
    schedule.push_back(Ms(t_reg, t_run));
    total.push_back(Ms(t0, t_run));
    std::printf("trial %2d: job %ld RUNNING after %7.0f ms (decision %5.0f, start+register %5.0f, schedule %5.0f)\n",
                t + 1, long(job), total.back(), decision.back(), start.back(), schedule.back());
    std::fflush(stdout);
  }
  std::printf("\ncold start, %d trials          p50 ms    p95 ms\n", trials);
  std::printf("  decision + pod create    %8.0f  %8.0f\n", Pct(decision, 0.5), Pct(decision, 0.95));
  std::printf("  start + registration     %8.0f  %8.0f\n", Pct(start, 0.5), Pct(start, 0.95));
  std::printf("  scheduling               %8.0f  %8.0f\n", Pct(schedule, 0.5), Pct(schedule, 0.95));
  std::printf("  sbatch -> RUNNING        %8.0f  %8.0f\n", Pct(total, 0.5), Pct(total, 0.95));
  return 0;
}
