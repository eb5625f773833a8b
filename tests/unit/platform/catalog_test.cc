// The platform catalog: user names derived and checked, uids handed out once and kept, tiers
// checked against a node, and a refused change leaves the files as they were.
#include "platform/catalog.h"

#include <gtest/gtest.h>

#include "common/files.h"

namespace hpc::platform {
namespace {

TEST(SlurmUserName, DerivedAndChecked) {
  EXPECT_EQ(DeriveSlurmUserName("Ann@Example.org").value_or(""), "ann");
  EXPECT_EQ(DeriveSlurmUserName("bob_smith").value_or(""), "bob_smith");
  EXPECT_NE(DeriveSlurmUserName("root").status().message().find("reserved"), std::string::npos);
  EXPECT_NE(DeriveSlurmUserName("mysql@x").status().message().find("reserved"), std::string::npos);
  EXPECT_NE(DeriveSlurmUserName("9lives").status().message().find("must match"), std::string::npos);
  EXPECT_FALSE(DeriveSlurmUserName(std::string(33, 'a')).ok());
}

TEST(TierFit, RefusedWithTheNumbers) {
  NodeCapacity node{2, 4096, 0};
  EXPECT_TRUE(CheckTierFits({"small", 1, 1024, 0}, node).ok());
  EXPECT_TRUE(CheckTierFits({"full", 2, 4096, 0}, node).ok());
  auto s = CheckTierFits({"big", 4, 1024, 0}, node);
  EXPECT_NE(s.message().find("asks 4 CPUs, 1024 MiB and 0 GPUs"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("holds 2 CPUs, 4096 MiB and 0 GPUs"), std::string::npos) << s.message();
  EXPECT_FALSE(CheckTierFits({"gpu", 1, 1024, 1}, node).ok());
}

TEST(Catalog, StableUidsPrivateGroupsRolesAndNothingWrittenOnError) {
  auto dir = files::MakeTempDir("hpcplane-catalog");
  ASSERT_TRUE(dir.ok());
  Catalog cat(*dir);
  auto ann = cat.AddUser("ann@example.org", {});
  ASSERT_TRUE(ann.ok()) << ann.status().message();
  auto bob = cat.AddUser("bob", {kRoleSysAdmin});
  ASSERT_TRUE(bob.ok());
  EXPECT_EQ(ann->slurm_name, "ann");
  EXPECT_EQ(ann->gid, ann->uid);
  EXPECT_NE(ann->uid, bob->uid);
  EXPECT_TRUE(bob->IsSysAdmin());
  EXPECT_FALSE(ann->IsSysAdmin());
  EXPECT_FALSE(cat.AddUser("ann", {}).ok());  // same Slurm name
  EXPECT_FALSE(cat.AddUser("carl", {"Wizard"}).ok());
  EXPECT_FALSE(cat.AddUser("carl", {}, bob->uid).ok());
  EXPECT_EQ(cat.Users()->size(), 2u);
  EXPECT_EQ(cat.FindUser("ann")->uid, ann->uid);  // by Slurm name or platform name
  EXPECT_EQ(cat.FindUser("ann@example.org")->uid, ann->uid);
  EXPECT_NE(cat.FindUser("zed").status().message().find("users add"), std::string::npos);
  ASSERT_TRUE(cat.RemoveUser("bob").ok());
  EXPECT_EQ(cat.Users()->size(), 1u);
  // Tiers: built-ins until changed; refused tiers leave the catalog as it was.
  EXPECT_TRUE(cat.FindTier("small").ok());
  EXPECT_FALSE(cat.AddTier({"huge", 100000, 1024, 0}, LocalNodeCapacity()).ok());
  EXPECT_FALSE(files::Exists(*dir + "/platform/tiers.json"));
  ASSERT_TRUE(cat.AddTier({"tiny", 1, 256, 0}, LocalNodeCapacity()).ok());
  EXPECT_EQ(cat.Tiers()->size(), 3u);
  EXPECT_NE(cat.FindTier("nope").status().message().find("known: small, medium, tiny"), std::string::npos);
  (void)files::RemoveAll(*dir);
}

// Dataset groups get one gid each, kept across calls, in their own range.
TEST(Catalog, DatasetGidsAreGivenOnceAndKept) {
  auto dir = files::MakeTempDir("hpcplane-catalog");
  ASSERT_TRUE(dir.ok());
  Catalog cat(*dir);
  auto astro = cat.DatasetGid("astro");
  auto bio = cat.DatasetGid("bio");
  ASSERT_TRUE(astro.ok() && bio.ok());
  EXPECT_NE(*astro, *bio);
  EXPECT_GE(*astro, kFirstDatasetGid);
  EXPECT_LE(*bio, kLastDatasetGid);
  EXPECT_EQ(Catalog(*dir).DatasetGid("astro").value_or(0), *astro);
  EXPECT_FALSE(cat.DatasetGid("../etc").ok());
  (void)files::RemoveAll(*dir);
}

}  // namespace
}  // namespace hpc::platform
