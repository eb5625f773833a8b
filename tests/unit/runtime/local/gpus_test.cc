#include "runtime/local/gpus.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <filesystem>

#include "common/files.h"

namespace hpc::runtime::local {
namespace {

// A host's driver as the tests make it: GPUs listed under proc/, device files under dev/
// (character devices of the NVIDIA major, which no driver answers here).
class FakeGpuHost : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = files::MakeTempDir("hpcplane-gpus-test");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    dir_ = *dir;
    host_.proc_dir = dir_ + "/proc";
    host_.dev_dir = dir_ + "/dev";
    ASSERT_TRUE(files::MakeDirs(host_.proc_dir).ok());
    ASSERT_TRUE(files::MakeDirs(host_.dev_dir).ok());
    if (::mknod((host_.dev_dir + "/probe").c_str(), S_IFCHR | 0600, makedev(195, 255)) != 0) {
      GTEST_SKIP() << "cannot make device files here (not root)";
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  void AddGpu(const std::string& bus_id, int minor, bool with_device = true) {
    ASSERT_TRUE(files::MakeDirs(host_.proc_dir + "/" + bus_id).ok());
    ASSERT_TRUE(files::WriteAtomic(host_.proc_dir + "/" + bus_id + "/information",
                                   "Model: \t\t Fake GPU\nBus Location: \t " + bus_id + "\nDevice Minor: \t " +
                                       std::to_string(minor) + "\n")
                    .ok());
    if (with_device) {
      const std::string dev = host_.dev_dir + "/nvidia" + std::to_string(minor);
      ASSERT_EQ(::mknod(dev.c_str(), S_IFCHR | 0666, makedev(195, minor)), 0) << dev;
    }
  }
  std::string PodDir(const std::string& name) {
    std::string d = dir_ + "/pods/" + name;
    EXPECT_TRUE(files::MakeDirs(d).ok());
    return d;
  }
  static std::vector<int> Minors(const std::vector<HostGpu>& gpus) {
    std::vector<int> out;
    for (const auto& g : gpus) out.push_back(g.minor);
    return out;
  }

  std::string dir_;
  GpuHost host_;
};

TEST_F(FakeGpuHost, ListsTheDriversGpusByMinorWithTheirDeviceFiles) {
  AddGpu("0000:3b:00.0", 1);
  AddGpu("0000:19:00.0", 0);
  auto gpus = ListHostGpus(host_);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  ASSERT_EQ(Minors(*gpus), (std::vector<int>{0, 1}));
  EXPECT_EQ((*gpus)[0].bus_id, "0000:19:00.0");
  EXPECT_EQ((*gpus)[0].device, host_.dev_dir + "/nvidia0");
  EXPECT_EQ((*gpus)[0].info_dir, host_.proc_dir + "/0000:19:00.0");
  // No driver, no GPUs.
  GpuHost none = host_;
  none.proc_dir = dir_ + "/no-driver";
  auto no_gpus = ListHostGpus(none);
  ASSERT_TRUE(no_gpus.ok()) << no_gpus.status().message();
  EXPECT_TRUE(no_gpus->empty());
}

TEST_F(FakeGpuHost, AGpuWithoutItsDeviceFileOrMinorIsAnErrorThatNamesIt) {
  AddGpu("0000:19:00.0", 0, /*with_device=*/false);
  auto gpus = ListHostGpus(host_);
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("0000:19:00.0"), std::string::npos) << gpus.status().message();
  EXPECT_NE(gpus.status().message().find("/nvidia0"), std::string::npos) << gpus.status().message();
  ASSERT_TRUE(files::WriteAtomic(host_.proc_dir + "/0000:19:00.0/information", "Model: Fake GPU\n").ok());
  gpus = ListHostGpus(host_);
  ASSERT_FALSE(gpus.ok());
  EXPECT_NE(gpus.status().message().find("Device Minor"), std::string::npos) << gpus.status().message();
}

TEST_F(FakeGpuHost, ControlDevicesAreTheOnesTheHostHas) {
  EXPECT_TRUE(GpuControlDevices(host_).empty());
  ASSERT_EQ(::mknod((host_.dev_dir + "/nvidiactl").c_str(), S_IFCHR | 0666, makedev(195, 255)), 0);
  EXPECT_EQ(GpuControlDevices(host_), (std::vector<std::string>{host_.dev_dir + "/nvidiactl"}));
}

// Each pod gets GPUs no other pod holds; a restarted pod keeps its own; a pod that cannot have
// all it asks for gets none and is told who holds the rest; a deleted pod's GPUs are free again,
// released or not (its directory gone).
TEST_F(FakeGpuHost, PodsHoldDistinctGpusKeepThemAcrossRestartsAndNeverFewerThanAsked) {
  for (int i = 0; i < 3; ++i) AddGpu("0000:0" + std::to_string(i) + ":00.0", i);
  auto gpus = ListHostGpus(host_);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  GpuClaims claims(dir_ + "/claims");
  const std::string a = PodDir("a"), b = PodDir("b"), c = PodDir("c");

  auto got_a = claims.Claim(a, 1, *gpus);
  ASSERT_TRUE(got_a.ok()) << got_a.status().message();
  EXPECT_EQ(Minors(*got_a), (std::vector<int>{0}));
  auto got_b = claims.Claim(b, 1, *gpus);
  ASSERT_TRUE(got_b.ok()) << got_b.status().message();
  EXPECT_EQ(Minors(*got_b), (std::vector<int>{1}));
  auto again = claims.Claim(a, 1, *gpus);  // a restarted pod
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(Minors(*again), (std::vector<int>{0}));

  auto too_many = claims.Claim(c, 2, *gpus);
  ASSERT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("needs 2 GPU(s): 1 of the host's 3 are free"), std::string::npos)
      << too_many.status().message();
  EXPECT_NE(too_many.status().message().find(a), std::string::npos) << too_many.status().message();
  EXPECT_FALSE(files::Exists(c + "/gpus"));  // nothing claimed

  ASSERT_TRUE(claims.Release(a).ok());
  EXPECT_FALSE(files::Exists(a + "/gpus"));
  std::filesystem::remove_all(b);  // b's daemon died and its pod directory went
  auto got_c = claims.Claim(c, 2, *gpus);
  ASSERT_TRUE(got_c.ok()) << got_c.status().message();
  EXPECT_EQ(Minors(*got_c), (std::vector<int>{0, 1}));
  EXPECT_TRUE(claims.Release(PodDir("never-claimed")).ok());
}

// After a reboot the claims are gone (tmpfs) but pods' lists are not: a GPU another pod claimed
// since is that pod's, and the pod that listed it gets another.
TEST_F(FakeGpuHost, AGpuClaimedSinceARebootIsNotTakenBackByThePodThatListedIt) {
  for (int i = 0; i < 2; ++i) AddGpu("0000:0" + std::to_string(i) + ":00.0", i);
  auto gpus = ListHostGpus(host_);
  ASSERT_TRUE(gpus.ok()) << gpus.status().message();
  GpuClaims claims(dir_ + "/claims");
  const std::string a = PodDir("a"), b = PodDir("b");
  ASSERT_EQ(Minors(*claims.Claim(a, 1, *gpus)), (std::vector<int>{0}));
  std::filesystem::remove_all(dir_ + "/claims");  // the reboot
  ASSERT_EQ(Minors(*claims.Claim(b, 1, *gpus)), (std::vector<int>{0}));
  auto again = claims.Claim(a, 1, *gpus);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(Minors(*again), (std::vector<int>{1}));
  EXPECT_FALSE(claims.Claim(PodDir("c"), 1, {}).ok());  // no GPUs at all: said so
}

}  // namespace
}  // namespace hpc::runtime::local
