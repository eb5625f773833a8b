#include "runtime/local/pod_cgroups.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "common/files.h"

namespace hpc::runtime::local {
namespace {

// A cgroup v2 tree made of plain files, as the kernel shows it: the cluster's directory lists
// the host's CPUs in cpuset.cpus.effective, a pod's cpuset.cpus is empty (inherited) until set.
class FakeV2Tree : public ::testing::Test {
 protected:
  void SetUp() override {
    auto dir = files::MakeTempDir("hpcplane-cgroups-test");
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    root_ = *dir;
    for (const char* cluster : {"mine", "other"}) {
      ASSERT_TRUE(files::MakeDirs(root_ + "/hpcplane/" + cluster).ok());
      ASSERT_TRUE(files::WriteAtomic(root_ + "/hpcplane/" + cluster + "/cpuset.cpus.effective", "0-3\n").ok());
    }
  }
  void TearDown() override { std::filesystem::remove_all(root_); }

  std::string Cpus(const std::string& cluster, const std::string& pod) {
    auto text = files::Read(root_ + "/hpcplane/" + cluster + "/" + pod + "/cpuset.cpus");
    return text.ok() ? *text : "";
  }

  std::string root_;
};

// A cluster's workers go to CPUs its other workers do not use, then to those the fewest pods
// use; a restarted pod keeps its CPUs; a pod that asks for the host's CPUs or more is not pinned.
TEST_F(FakeV2Tree, WorkersArePinnedApartAndKeepTheirCpus) {
  PodCgroups mine(CgroupHierarchy::kV2, root_, "mine"), other(CgroupHierarchy::kV2, root_, "other");
  ASSERT_TRUE(other.Create("o-0", {}, 1).ok());
  EXPECT_EQ(Cpus("other", "o-0"), "0");
  ASSERT_TRUE(mine.Create("w-0", {}, 1).ok());
  EXPECT_EQ(Cpus("mine", "w-0"), "1");  // CPU 0 carries another cluster's pod
  ASSERT_TRUE(mine.Create("w-1", {}, 2).ok());
  EXPECT_EQ(Cpus("mine", "w-1"), "2-3");
  ASSERT_TRUE(mine.Create("w-2", {}, 1).ok());
  EXPECT_EQ(Cpus("mine", "w-2"), "0");          // the one CPU without a worker of its own cluster
  ASSERT_TRUE(mine.Create("w-0", {}, 1).ok());  // restarted
  EXPECT_EQ(Cpus("mine", "w-0"), "1");
  ASSERT_TRUE(mine.Create("big", {}, 4).ok());
  EXPECT_EQ(Cpus("mine", "big"), "");  // the whole host: left to inherit it
}

// A pod whose pinning did not happen (its directory made, the daemon gone before it chose) is
// pinned at its next start, not left on every CPU.
TEST_F(FakeV2Tree, APodLeftUnpinnedIsPinnedAtItsNextStart) {
  PodCgroups mine(CgroupHierarchy::kV2, root_, "mine");
  ASSERT_TRUE(files::MakeDirs(root_ + "/hpcplane/mine/w-0").ok());
  ASSERT_TRUE(mine.Create("w-0", {}, 1).ok());
  EXPECT_EQ(Cpus("mine", "w-0"), "0");
}

}  // namespace
}  // namespace hpc::runtime::local
