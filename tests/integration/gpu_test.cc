// GPU workers on a host whose driver the test makes (CI has no GPU): the driver's list of GPUs
// (HPCPLANE_GPU_PROC_DIR, as /proc/driver/nvidia/gpus shows it) and character devices of the
// NVIDIA major (HPCPLANE_GPU_DEV_DIR), which no driver answers here. Each worker gets GPUs of
// its own; slurmd finds them (AutoDetect=nvidia), Slurm sets CUDA_VISIBLE_DEVICES, and a job is
// denied the devices it did not ask for (ConstrainDevices: EPERM), while opening its own gets
// past the cgroup to the missing driver (ENXIO). The driver's tools come from the host (a
// stand-in nvidia-smi under HPCPLANE_GPU_DRIVER_ROOT): a job's nvidia-smi lists its GPUs only,
// the health check asks it, and an ECC error injected into one GPU drains and replaces its
// worker, the reason in Slurm; each GPU's numbers reach /metrics. Real Slurm 26.05.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <set>
#include <thread>

#include <httplib.h>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

// The stand-in nvidia-smi: the GPUs in the driver's list that this process may open (under
// ConstrainDevices a job opens only its own: EPERM for the others; its own gets ENXIO, there is
// no driver), each with the faults the test wrote into its fake-faults file ("ecc=N").
constexpr const char* kFakeNvidiaSmi = R"SH(#!/bin/bash
case "$*" in
  -L) mode=list ;;
  *--query-gpu=*) mode=gpus ;;
  *--query-remapped-rows=*) mode=rows ;;
  *) echo "fake nvidia-smi: $* is not faked"; exit 2 ;;
esac
i=0
for d in /proc/driver/nvidia/gpus/*/; do
  bus=$(basename "$d")
  minor=$(sed -n 's/^Device Minor:[[:space:]]*//p' "$d/information")
  case $( (exec 3<"/dev/nvidia$minor") 2>&1 ) in *"not permitted"*) continue ;; esac
  ecc=0
  faults=$(cat "$d/fake-faults" 2>/dev/null)
  [[ $faults == ecc=* ]] && ecc=${faults#ecc=}
  case $mode in
    list) echo "GPU $i: Fake GPU (UUID: GPU-fake-$bus)" ;;
    gpus) echo "0000$bus, $ecc, No, 3, 100, 81559, 40" ;;
    rows) echo "0000$bus, No, No" ;;
  esac
  i=$((i + 1))
done
[ "$i" -gt 0 ] || { echo "No devices were found"; exit 6; }
)SH";

// The fake driver, and the daemon pointed at it through its environment (the test's process
// starts `up`, whose daemon inherits it).
class FakeDriver {
 public:
  explicit FakeDriver(int gpus) {
    auto dir = files::MakeTempDir("hpcplane-gpu-it");
    dir_ = dir.ok() ? *dir : "";
    ok_ = !dir_.empty() && files::MakeDirs(dir_ + "/proc").ok() && files::MakeDirs(dir_ + "/dev").ok() &&
          ::mknod((dir_ + "/dev/nvidiactl").c_str(), S_IFCHR | 0666, makedev(195, 255)) == 0;
    for (int i = 0; ok_ && i < gpus; ++i) {
      const std::string bus = "0000:1" + std::to_string(i) + ":00.0";
      ok_ = files::MakeDirs(dir_ + "/proc/" + bus).ok() &&
            files::WriteAtomic(
                dir_ + "/proc/" + bus + "/information",
                "Model: \t\t Fake GPU\nBus Location: \t " + bus + "\nDevice Minor: \t " + std::to_string(i) + "\n")
                .ok() &&
            ::mknod((dir_ + "/dev/nvidia" + std::to_string(i)).c_str(), S_IFCHR | 0666, makedev(195, i)) == 0;
    }
    // The driver's user-space files: the tool, and a library under two names.
    const std::string lib = dir_ + "/root/usr/lib/x86_64-linux-gnu";
    ok_ = ok_ && files::MakeDirs(dir_ + "/root/usr/bin").ok() &&
          files::WriteAtomic(dir_ + "/root/usr/bin/nvidia-smi", kFakeNvidiaSmi, 0755).ok() &&
          files::MakeDirs(lib).ok() && files::WriteAtomic(lib + "/libnvidia-ml.so.999.1", "fake NVML").ok() &&
          ::symlink("libnvidia-ml.so.999.1", (lib + "/libnvidia-ml.so.1").c_str()) == 0;
    ::setenv("HPCPLANE_GPU_PROC_DIR", (dir_ + "/proc").c_str(), 1);
    ::setenv("HPCPLANE_GPU_DEV_DIR", (dir_ + "/dev").c_str(), 1);
    ::setenv("HPCPLANE_GPU_DRIVER_ROOT", (dir_ + "/root").c_str(), 1);
  }
  ~FakeDriver() {
    ::unsetenv("HPCPLANE_GPU_PROC_DIR");
    ::unsetenv("HPCPLANE_GPU_DEV_DIR");
    ::unsetenv("HPCPLANE_GPU_DRIVER_ROOT");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool ok() const { return ok_; }
  // Makes the GPU report `faults` (e.g. "ecc=2"), or none with "".
  bool Inject(const std::string& bus, const std::string& faults) {
    return files::WriteAtomic(dir_ + "/proc/" + bus + "/fake-faults", faults).ok();
  }

 private:
  std::string dir_;
  bool ok_ = false;
};

std::string Trimmed(const ProcessResult& r) {
  return Trim(r.out) + (r.exit_code != 0 ? " (exit " + std::to_string(r.exit_code) + ": " + Trim(r.err) + ")" : "");
}

TEST(GpuIT, EachWorkerHasGpusOfItsOwnAndEachJobOnlyThoseItAskedFor) {
  if (!HostHasCgroupV1()) GTEST_SKIP() << "jobs are confined on cgroup v1 hosts";
  FakeDriver driver(3);
  ASSERT_TRUE(driver.ok()) << "cannot make the fake driver's devices (not root?)";
  ClusterOptions o;
  o.replicas = 2;
  o.max_replicas = 2;
  o.gpus = 1;
  TestCluster c("gpus", o);
  ASSERT_EQ(c.Up().exit_code, 0);

  // Each worker's /dev and driver list show one GPU, not the other's, and the control device.
  std::set<std::string> seen;
  for (const char* worker : {"cpu-0", "cpu-1"}) {
    auto devs = c.Cli({"exec", worker, "--", "sh", "-c", "cd /dev && ls -d nvidia*; ls /proc/driver/nvidia/gpus"});
    ASSERT_EQ(devs.exit_code, 0) << devs.err;
    std::istringstream names(devs.out);
    std::vector<std::string> listed;
    for (std::string n; names >> n;) listed.push_back(n);
    ASSERT_EQ(listed.size(), 3u) << worker << ": " << devs.out;  // nvidiaN, nvidiactl, its bus id
    EXPECT_EQ(listed[1], "nvidiactl") << devs.out;
    EXPECT_TRUE(seen.insert(listed[0]).second) << listed[0] << " is in two workers";
  }

  // Slurm found each worker's GPU and gives it to the job that asks, as CUDA_VISIBLE_DEVICES.
  auto gres = c.Login("alice", {"sinfo", "-h", "-N", "-o", "%N %G"});
  EXPECT_NE(gres.out.find("gpu:"), std::string::npos) << Trimmed(gres);
  EXPECT_EQ(Trimmed(c.Login("alice", {"srun", "--gres=gpu:1", "printenv", "CUDA_VISIBLE_DEVICES"}, 90s)), "0");

  // A job opens its own GPU as far as the (missing) driver; one that asked for none is denied it.
  const std::string open_gpu = "for d in /dev/nvidia[0-9]*; do (exec 3<$d) 2>&1 | sed 's/.*: //'; done";
  EXPECT_EQ(Trimmed(c.Login("alice", {"srun", "--gres=gpu:1", "bash", "-c", open_gpu}, 90s)),
            "No such device or address");
  EXPECT_EQ(Trimmed(c.Login("alice", {"srun", "bash", "-c", open_gpu}, 90s)), "Operation not permitted");
}

// The reason Slurm holds for a node, to the end of its line.
std::string NodeReason(TestCluster& c, const std::string& node) {
  auto r = c.Login("root", {"scontrol", "show", "node", node});
  auto pos = r.out.find(" Reason=");
  return pos == std::string::npos ? "" : r.out.substr(pos + 8, r.out.find('\n', pos) - pos - 8);
}

TEST(GpuIT, AJobsNvidiaSmiListsItsGpusOnlyAndAnEccErrorDrainsTheWorkerKeepingItsGpuOutOfUse) {
  if (!HostHasCgroupV1()) GTEST_SKIP() << "jobs are confined on cgroup v1 hosts";
  FakeDriver driver(2);
  ASSERT_TRUE(driver.ok()) << "cannot make the fake driver's devices (not root?)";
  const int metrics_port = FreeLoopbackPort();
  ClusterOptions o;
  o.replicas = 1;
  o.max_replicas = 2;
  o.gpus = 1;
  o.extra_cluster_spec = "  healthChecks:\n    interval: 2s\n    timeout: 5s\n    replaceAfter: 4s\n";
  o.extra_up_args = {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)};
  TestCluster c("gpuhc", o);
  ASSERT_EQ(c.Up().exit_code, 0);

  // The host driver's tool and library are in the GPU worker, read-only; not in other pods.
  auto files_in = c.Cli({"exec", "cpu-0", "--", "sh", "-c",
                         "readlink /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1; touch /usr/bin/nvidia-smi 2>&1 "
                         "| sed 's/.*: //'"});
  EXPECT_EQ(Trimmed(files_in), "libnvidia-ml.so.999.1\nRead-only file system");
  EXPECT_EQ(Trimmed(c.Cli({"exec", c.name() + "-controller", "--", "sh", "-c", "command -v nvidia-smi || echo none"})),
            "none");

  // A job's nvidia-smi lists the GPU it was given; one that asked for none sees no GPU.
  const std::string listed = Trimmed(c.Login("alice", {"srun", "--gres=gpu:1", "nvidia-smi", "-L"}, 90s));
  ASSERT_EQ(listed.rfind("GPU 0: Fake GPU (UUID: GPU-fake-0000:1", 0), 0u) << listed;
  const std::string bus = listed.substr(listed.find("GPU-fake-") + 9, 12);
  const std::string none = Trimmed(c.Login("alice", {"srun", "nvidia-smi", "-L"}, 90s));
  EXPECT_EQ(none.rfind("No devices were found (exit ", 0), 0u) << none;

  // The health check reports the GPU's numbers; the daemon exports them.
  httplib::Client daemon("127.0.0.1", metrics_port);
  daemon.set_bearer_token_auth(Trim(files::Read(c.ClusterDir() + "/metrics.token").value_or("")));
  const std::string series =
      "hpcplane_gpu_temperature_celsius{gpu=\"0000" + bus + "\",node=\"cpu-0\",nodeset=\"cpu\"} 40";
  std::string scraped;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto r = daemon.Get("/metrics");
        scraped = r ? r->body : "";
        return scraped.find(series + "\n") != std::string::npos;
      },
      30s))
      << series << " not in:\n"
      << scraped << c.Login("root", {"scontrol", "show", "node", "cpu-0"}).out;

  // An uncorrectable ECC error: the worker is drained with the reason. The fault stays with the
  // GPU, so the worker is kept (holding that GPU from every other worker) past replaceAfter,
  // and a new worker on the other GPU takes its place.
  ASSERT_TRUE(driver.Inject(bus, "ecc=2"));
  const std::string reason = "hpcplane:health:gpu: GPU 0000" + bus + ": 2 uncorrectable ECC error(s)";
  ASSERT_TRUE(WaitFor([&] { return NodeReason(c, "cpu-0").rfind(reason, 0) == 0; }, 30s)) << NodeReason(c, "cpu-0");
  ASSERT_TRUE(
      WaitFor([&] { return c.NodeSetStatusField("ready") == "1" && c.NodeSetStatusField("replicas") == "2"; }, 60s))
      << c.Cli({"describe", "nodeset", "cpu"}).out;
  const std::string other = Trimmed(c.Login("alice", {"srun", "--gres=gpu:1", "nvidia-smi", "-L"}, 90s));
  EXPECT_EQ(other.find(bus), std::string::npos) << "the new worker has the other GPU: " << other;
  EXPECT_NE(other.find("GPU 0: Fake GPU"), std::string::npos) << other;
  std::this_thread::sleep_for(6s);  // past replaceAfter (4s): a time the test must let pass, not a condition
  EXPECT_EQ(c.NodeSetStatusField("replacements"), "0") << c.Cli({"describe", "nodeset", "cpu"}).out;
  EXPECT_EQ(NodeReason(c, "cpu-0").rfind(reason, 0), 0u) << "still drained, still holding its GPU";

  // The GPU reset (the fault gone): the worker's next check passes and it is resumed.
  ASSERT_TRUE(driver.Inject(bus, ""));
  ASSERT_TRUE(WaitFor([&] { return NodeReason(c, "cpu-0").empty(); }, 30s)) << NodeReason(c, "cpu-0");
  EXPECT_EQ(c.NodeSetStatusField("unhealthy"), "0");
}

}  // namespace
}  // namespace hpc::it
