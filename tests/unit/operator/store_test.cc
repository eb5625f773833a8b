// The operator's file store: specs and status in separate files, generations bumped only by a
// changed spec, status written only on change, and a corrupt status never blocks a load.
#include "operator/store.h"

#include <sys/stat.h>

#include <gtest/gtest.h>

#include "common/files.h"

namespace hpc::op {
namespace {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = *files::MakeTempDir("hpcplane-store"); }
  void TearDown() override { (void)files::RemoveAll(dir_); }
  static api::SlurmCluster Cluster() {
    api::SlurmCluster c;
    c.metadata.name = "c1";
    c.spec.subnet = "10.213.20.0/24";
    return c;
  }
  static api::NodeSet NodeSet(int max) {
    api::NodeSet n;
    n.metadata.name = "cpu";
    n.spec.cluster = "c1";
    n.spec.max_replicas = max;
    return n;
  }
  int64_t Mtime(const std::string& path) {
    struct stat st {};
    ::stat(path.c_str(), &st);
    return st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
  }
  std::string dir_;
};

TEST_F(StoreTest, GenerationGrowsOnlyWhenTheSpecChanges) {
  Store s(dir_);
  ASSERT_TRUE(s.SaveNodeSet(NodeSet(4)).ok());
  EXPECT_EQ(s.LoadNodeSet("cpu")->metadata.generation, 1);
  ASSERT_TRUE(s.SaveNodeSet(NodeSet(4)).ok());
  EXPECT_EQ(s.LoadNodeSet("cpu")->metadata.generation, 1) << "the same spec again is no change";
  ASSERT_TRUE(s.SaveNodeSet(NodeSet(6)).ok());
  EXPECT_EQ(s.LoadNodeSet("cpu")->metadata.generation, 2);
  EXPECT_EQ(s.LoadNodeSet("cpu")->spec.max_replicas, 6);
}

TEST_F(StoreTest, StatusIsItsOwnFileWrittenOnlyOnChange) {
  Store s(dir_);
  ASSERT_TRUE(s.SaveCluster(Cluster()).ok());
  api::SlurmClusterStatus st;
  st.observed_generation = 1;
  st.components = {{"controller", "Ready"}};
  ASSERT_TRUE(s.SaveClusterStatus(st).ok());
  const std::string path = dir_ + "/status/cluster.json";
  const int64_t first = Mtime(path);
  ASSERT_TRUE(s.SaveClusterStatus(st).ok());
  EXPECT_EQ(Mtime(path), first) << "an unchanged status is not rewritten";
  auto c = s.LoadCluster();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->status.components.at("controller"), "Ready");
  // Saving the spec leaves the operator's status alone, and the other way round.
  ASSERT_TRUE(s.SaveCluster(Cluster()).ok());
  EXPECT_EQ(s.LoadCluster()->status.components.at("controller"), "Ready");
}

TEST_F(StoreTest, ACorruptStatusReadsAsNoStatusAndACorruptSpecIsAnError) {
  Store s(dir_);
  ASSERT_TRUE(s.SaveCluster(Cluster()).ok());
  ASSERT_TRUE(files::MakeDirs(dir_ + "/status").ok());
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/status/cluster.json", "{not json").ok());
  auto c = s.LoadCluster();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->status.observed_generation, 0);
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/cluster.json", "{not json").ok());
  EXPECT_FALSE(s.LoadCluster().ok());
}

TEST_F(StoreTest, DeletedNodeSetsAreGoneAndWorkspacesBringTheirOwn) {
  Store s(dir_);
  ASSERT_TRUE(s.SaveNodeSet(NodeSet(4)).ok());
  ASSERT_TRUE(s.DeleteNodeSet("cpu").ok());
  EXPECT_TRUE(s.LoadNodeSets()->empty());
  api::Workspace w;
  w.metadata.name = "ws-1";
  w.spec.cluster = "c1";
  w.spec.user = {"alice", 2001, 2001, false, ""};
  w.spec.project = "astro";
  ASSERT_TRUE(s.SaveWorkspace(w).ok());
  EXPECT_TRUE(s.HasWorkspace("ws-1"));
  auto all = s.LoadAllNodeSets();
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 1u) << "a workspace's own nodeset";
  EXPECT_EQ((*all)[0].metadata.name, "ws-1");
  ASSERT_TRUE(s.DeleteWorkspace("ws-1").ok());
  EXPECT_FALSE(s.HasWorkspace("ws-1"));
}

}  // namespace
}  // namespace hpc::op
