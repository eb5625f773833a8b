// The local runtime's supervision with real processes: a pod over its memory limit is killed
// and restarted, and says why, as a Kubernetes memory limit would.
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/files.h"
#include "harness.h"
#include "runtime/local/local_runtime.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

TEST(LocalRuntime, PodOverItsMemoryLimitIsKilledAndRestarted) {
  auto dir = files::MakeTempDir("hpcplane-rt");
  ASSERT_TRUE(dir.ok());
  runtime::local::LocalRuntime::Options o;
  o.dir = *dir + "/runtime";
  o.cluster_key = *dir + "/memlimit";
  o.subnet = "10.239." + std::to_string(::getpid() % 256) + ".0/24";
  o.self_exe = HPCPLANE_BIN;
  o.supervise = true;
  auto rt = runtime::local::LocalRuntime::Create(o);
  ASSERT_TRUE(rt.ok()) << rt.status().message();
  runtime::PodSpec hog;
  hog.name = "hog";
  // Takes 200 MiB, then waits; its limit is 100 MiB.
  hog.command = {"python3", "-c",
                 "import time; x = bytearray(200 << 20); x[::4096] = b'x' * len(x[::4096]); time.sleep(600)"};
  hog.resources.limits.memory_mib = 100;
  runtime::PodSpec calm = hog;
  calm.name = "calm";
  calm.command = {"sleep", "600"};
  calm.resources.limits.cpus = 1;
  ASSERT_TRUE((*rt)->CreatePod(hog).ok());
  ASSERT_TRUE((*rt)->CreatePod(calm).ok());
  auto pod = [&](const std::string& name) {
    runtime::PodStatus out;
    auto pods = (*rt)->ListPods({});
    if (pods.ok()) {
      for (const auto& p : *pods) {
        if (p.name == name) out = p;
      }
    }
    return out;
  };
  EXPECT_TRUE(WaitFor(
      [&] {
        (*rt)->Supervise();
        return pod("hog").restarts >= 1;
      },
      60s))
      << pod("hog").message;
  // Its last exit says why, with the numbers; the pod under its limit runs on untouched.
  EXPECT_TRUE(WaitFor(
      [&] {
        (*rt)->Supervise();
        return pod("hog").message.find("over its memory limit of 100 MiB") != std::string::npos;
      },
      10s))
      << pod("hog").message;
  EXPECT_EQ(pod("calm").restarts, 0);
  // The memory limit is enforced, the CPU limit is not, and the status says so.
  EXPECT_TRUE(pod("hog").not_enforced.empty());
  ASSERT_EQ(pod("calm").not_enforced.size(), 1u);
  EXPECT_EQ(pod("calm").not_enforced[0].rfind("limits.cpus: not enforced", 0), 0u) << pod("calm").not_enforced[0];
  EXPECT_EQ(pod("calm").phase, runtime::PodPhase::kRunning);
  ASSERT_TRUE((*rt)->Teardown().ok());
  rt->reset();
  (void)files::RemoveAll(*dir);
}

}  // namespace
}  // namespace hpc::it
