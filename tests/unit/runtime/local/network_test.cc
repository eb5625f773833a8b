#include "runtime/local/network.h"

#include <gtest/gtest.h>

namespace hpc::runtime::local {
namespace {

// Interface names must fit IFNAMSIZ (15 characters) and differ between clusters.
TEST(NetworkNamesTest, FitIfnamsizAndDifferPerCluster) {
  auto a = NamesFor("/var/lib/hpcplane/a");
  auto b = NamesFor("/var/lib/hpcplane/b");
  EXPECT_NE(a.Bridge(), b.Bridge());
  EXPECT_LE(a.Bridge().size(), 15u);
  EXPECT_LE(a.HostVeth("a-very-long-pod-name-0").size() + 1, 15u);  // +1 for the peer's "p"
  EXPECT_NE(a.HostVeth("cpu-0"), a.HostVeth("cpu-1"));
  EXPECT_EQ(a.Netns("cpu-0").rfind(a.NetnsPrefix(), 0), 0u);
}

// A pod that takes over an address takes over its MAC too: ARP caches stay right.
TEST(NetworkTest, APodsMacAddressFollowsItsIpAddress) {
  EXPECT_EQ(PodMac("10.236.204.6"), "02:42:0a:ec:cc:06");
  EXPECT_EQ(PodMac("10.236.204.6"), PodMac("10.236.204.6"));
  EXPECT_NE(PodMac("10.236.204.6"), PodMac("10.236.204.7"));
  EXPECT_EQ(PodMac("not an address"), "");
}

TEST(NetworkTest, ParsesSubnetsAndAllocatesHosts) {
  auto s = ParseSubnet("10.9.8.0/24");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->Gateway(), "10.9.8.1");
  EXPECT_EQ(s->Address(7), "10.9.8.7");
  EXPECT_FALSE(ParseSubnet("10.9.8.0/16").ok());
  EXPECT_EQ(*AllocateHost({2, 3, 5}), 4);
  std::vector<int> all;
  for (int i = 2; i <= 254; ++i) all.push_back(i);
  EXPECT_FALSE(AllocateHost(all).ok());
}

}  // namespace
}  // namespace hpc::runtime::local
