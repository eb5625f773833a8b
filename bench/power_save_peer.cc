// Peer for the cold-start benchmark: the same job through Slurm's own power saving. The
// partition "cloud" has State=CLOUD nodes; slurmctld's ResumeProgram (a script on the
// controller's state volume) appends "resume HOSTLIST" to a request file, and this program,
// acting as the cloud provider, starts the same kind of local worker pod (slurmd -N NAME)
// for each node; SuspendProgram's "suspend HOSTLIST" deletes it. Usage:
//   bench_power_save STATE_DIR CLUSTER TRIALS
#include <cstdio>
#include <ctime>
#include <optional>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "bench_cluster.h"
#include "common/files.h"

using namespace hpc;
using bench::Clock;
using bench::Ms;
using bench::Pct;

// "cloud-0" or "cloud-[0-1]" or "cloud-[0,2]".
static std::vector<std::string> ExpandHostlist(const std::string& list) {
  auto lb = list.find('[');
  if (lb == std::string::npos) return {list};
  std::string prefix = list.substr(0, lb), inner = list.substr(lb + 1, list.find(']') - lb - 1);
  std::vector<std::string> out;
  std::stringstream ss(inner);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    int lo = std::stoi(part.substr(0, dash)), hi = dash == std::string::npos ? lo : std::stoi(part.substr(dash + 1));
    for (int i = lo; i <= hi; ++i) out.push_back(prefix + std::to_string(i));
  }
  return out;
}

int main(int argc, char** argv) {
  if (argc != 4) return std::fprintf(stderr, "usage: %s STATE_DIR CLUSTER TRIALS\n", argv[0]), 2;
  op::ClusterPaths paths{argv[1], argv[2]};
  const int trials = std::atoi(argv[3]);
  auto opened = bench::OpenBenchCluster(paths, true);
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.status().message().c_str()), 1;
  auto& b = **opened;
  auto& rest = *b.rest;
  auto* rt = &b.rt;
  const auto* cluster = &b.cluster;
  auto inputs = op::HostBuildInputs();
  if (!inputs.ok()) return std::fprintf(stderr, "%s\n", inputs.status().message().c_str()), 1;
  // The cluster's slurm.conf confines jobs as the daemon's does, so its slurmd needs the same.
  inputs->job_cgroups = app::HostJobCgroups();
  // Its workers run the cluster's image, as the daemon's do.
  if (Status s = app::ResolveClusterImages(paths.state_dir, *cluster, &*inputs); !s.ok()) {
    return std::fprintf(stderr, "%s\n", s.message().c_str()), 1;
  }
  const std::string requests = paths.RuntimeDir() + "/volumes/controller-state/peer/requests";
  size_t handled = 0;
  api::NodeSet cloud;
  cloud.metadata.name = "cloud";
  cloud.spec.resources = {1, 500, 0};

  // Acts on new resume/suspend requests; returns true when a resume was handled.
  auto serve = [&]() {
    auto text = files::Read(requests);
    if (!text.ok() || text->size() <= handled) return false;
    std::string fresh = text->substr(handled);
    if (fresh.back() != '\n') return false;
    handled = text->size();
    bool resumed = false;
    // slurmctld takes a resumed node as booted only if its boot time (seconds, from slurmd -b
    // and its uptime) is not before the resume request's second. A pod's slurmd registers
    // within the same second it is asked for, and was then ignored until ResumeTimeout; a real
    // cloud node takes far longer to boot, so the peer waits into the second after next.
    const std::time_t asked = std::time(nullptr);
    bool waited = false;
    std::stringstream lines(fresh);
    std::string verb, list;
    while (lines >> verb >> list) {
      for (const auto& node : ExpandHostlist(list)) {
        if (verb == "resume") {
          while (!waited && std::time(nullptr) < asked + 2) std::this_thread::sleep_for(std::chrono::milliseconds(20));
          waited = true;
          runtime::PodSpec pod = op::BuildWorkerPod(*cluster, cloud, 0, *inputs);
          pod.name = node;
          pod.labels.erase(op::kLabelNodeSet);
          pod.labels[op::kLabelComponent] = "peer-worker";
          // -b: report the node as booted when slurmd starts. Pods share the host kernel and so
          // its boot time, which predates the resume request; slurmctld would then wait for a
          // reboot until ResumeTimeout and mark the node DOWN.
          pod.command = {"slurmd", "-D", "-b", "-N", node};
          // Configless (auth/slurm): the same configuration server as the cluster's own workers.
          if (!op::UsesMunge(*inputs)) {
            pod.command.insert(
                pod.command.end(),
                {"--conf-server", fmt::format("{}:{}", slurm::ControllerHost(*cluster), slurm::kSlurmctldPort)});
          }
          pod.restart_policy = runtime::RestartPolicy::kNever;
          Status s = (*rt)->CreatePod(pod);
          if (!s.ok()) std::fprintf(stderr, "resume %s: %s\n", node.c_str(), s.message().c_str());
          resumed = true;
        } else {
          (void)(*rt)->DeletePod(node);
        }
      }
    }
    return resumed;
  };
  auto node_state = [&](const std::string& name) -> std::optional<slurm::SlurmNode> {
    auto nodes = rest.Nodes();
    if (!nodes.ok()) return std::nullopt;
    for (const auto& nd : *nodes) {
      if (nd.name == name) return nd;
    }
    return std::nullopt;
  };

  std::vector<double> resume_wait, start, total;
  for (int t = 0; t < trials; ++t) {
    // Powered down and no worker pod: the peer's "scaled to zero".
    auto deadline = Clock::now() + std::chrono::seconds(180);
    for (;;) {
      serve();
      // Slurm hides powered-down CLOUD nodes from its node listing.
      auto nodes = rest.Nodes();
      bool down = nodes.ok() && std::none_of(nodes->begin(), nodes->end(), [](const auto& nd) {
                    return nd.name.rfind("cloud-", 0) == 0 && !nd.flags.count("POWERED_DOWN");
                  });
      auto pods = (*rt)->ListPods({{op::kLabelComponent, "peer-worker"}});
      if (down && pods.ok() && pods->empty()) break;
      if (Clock::now() > deadline) return std::fprintf(stderr, "cloud-0 never powered down\n"), 1;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    runtime::ExecOptions o;
    o.user = "alice";
    o.argv = {"sbatch", "--parsable", "-p", "cloud", "-o", "/dev/null", "--wrap", "sleep 1"};
    auto r = (*rt)->Exec(op::LoginPodName(*cluster), o);
    auto t0 = Clock::now();
    if (!r.ok() || r->exit_code != 0) return std::fprintf(stderr, "sbatch failed\n"), 1;
    int64_t job = std::atoll(r->out.c_str());
    Clock::time_point t_req{}, t_run{};
    while (t_run == Clock::time_point{}) {
      if (Clock::now() - t0 > std::chrono::seconds(300)) {
        auto nd = node_state("cloud-0");
        return std::fprintf(stderr, "job %ld did not start (cloud-0: %s %s)\n", long(job), nd ? nd->state.c_str() : "?",
                            nd ? nd->reason.c_str() : ""),
               1;
      }
      if (serve() && t_req == Clock::time_point{}) t_req = Clock::now();
      auto jobs = rest.Jobs();
      if (jobs.ok()) {
        for (const auto& j : *jobs) {
          if (j.job_id == job && j.state == "RUNNING" && !j.configuring) t_run = Clock::now();
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    if (t_req == Clock::time_point{}) t_req = t_run;
    resume_wait.push_back(Ms(t0, t_req));
    start.push_back(Ms(t_req, t_run));
    total.push_back(Ms(t0, t_run));
    std::printf(
        "peer trial %2d: job %ld RUNNING after %7.0f ms (ResumeProgram called %6.0f, pod+register+schedule %6.0f)\n",
        t + 1, long(job), total.back(), resume_wait.back(), start.back());
    std::fflush(stdout);
  }
  std::printf("\npower-saving peer, %d trials   p50 ms    p95 ms\n", trials);
  std::printf("  until ResumeProgram      %8.0f  %8.0f\n", Pct(resume_wait, 0.5), Pct(resume_wait, 0.95));
  std::printf("  pod, register, schedule  %8.0f  %8.0f\n", Pct(start, 0.5), Pct(start, 0.95));
  std::printf("  sbatch -> RUNNING        %8.0f  %8.0f\n", Pct(total, 0.5), Pct(total, 0.95));
  // Leave nothing for the next run: power everything down.
  auto peers = (*rt)->ListPods({{op::kLabelComponent, "peer-worker"}});
  if (peers.ok()) {
    for (const auto& p : *peers) (void)(*rt)->DeletePod(p.name);
  }
  return 0;
}
