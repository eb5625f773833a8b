// GPU workers on a host whose driver the test makes (CI has no GPU): the driver's list of GPUs
// (HPCPLANE_GPU_PROC_DIR, as /proc/driver/nvidia/gpus shows it) and character devices of the
// NVIDIA major (HPCPLANE_GPU_DEV_DIR), which no driver answers here. Each worker gets GPUs of
// its own; slurmd finds them (AutoDetect=nvidia), Slurm sets CUDA_VISIBLE_DEVICES, and a job is
// denied the devices it did not ask for (ConstrainDevices: EPERM), while opening its own gets
// past the cgroup to the missing driver (ENXIO). Real Slurm 26.05.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

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
    ::setenv("HPCPLANE_GPU_PROC_DIR", (dir_ + "/proc").c_str(), 1);
    ::setenv("HPCPLANE_GPU_DEV_DIR", (dir_ + "/dev").c_str(), 1);
  }
  ~FakeDriver() {
    ::unsetenv("HPCPLANE_GPU_PROC_DIR");
    ::unsetenv("HPCPLANE_GPU_DEV_DIR");
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  bool ok() const { return ok_; }

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

}  // namespace
}  // namespace hpc::it
