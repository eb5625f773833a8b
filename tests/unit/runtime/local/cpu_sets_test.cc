#include "runtime/local/cpu_sets.h"

#include <gtest/gtest.h>

namespace hpc::runtime::local {
namespace {

TEST(CpuSetsTest, ParsesAndFormatsTheKernelsCpuLists) {
  auto cpus = ParseCpuList("0-3,8,10-11\n");
  ASSERT_TRUE(cpus.ok()) << cpus.status().message();
  EXPECT_EQ(*cpus, (std::vector<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(FormatCpuList(*cpus), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList({5, 1, 0, 5}), "0-1,5");
  EXPECT_TRUE(ParseCpuList("")->empty());
}

TEST(CpuSetsTest, RefusesWhatIsNotACpuList) {
  for (const char* bad : {"a", "1-", "-1", "3-1", "1,,2", "99999"}) {
    auto cpus = ParseCpuList(bad);
    ASSERT_FALSE(cpus.ok()) << bad;
    EXPECT_NE(cpus.status().message().find(std::string("\"") + bad + "\""), std::string::npos)
        << cpus.status().message();
  }
}

// Workers of one cluster go to distinct CPUs first, even where other clusters' pods make a CPU
// the cluster already uses the least loaded host-wide (the ranks of one MPI job on distinct
// cores); then the least loaded CPUs; then the lower numbers.
TEST(CpuSetsTest, ACpuOfTheClustersOwnIsTakenLastThenTheBusiestOnTheHost) {
  const std::vector<int> host = {0, 1, 2, 3};
  EXPECT_EQ(LeastLoadedCpus(host, {}, 2), (std::vector<int>{0, 1}));
  CpuLoad load;
  load.all = {{0, 1}, {1, 3}, {2, 2}};  // CPU 3 is free
  EXPECT_EQ(LeastLoadedCpus(host, load, 1), (std::vector<int>{3}));
  EXPECT_EQ(LeastLoadedCpus(host, load, 2), (std::vector<int>{0, 3}));
  load.siblings = {{0, 1}, {3, 1}};
  load.all[3] = 1;
  EXPECT_EQ(LeastLoadedCpus(host, load, 2), (std::vector<int>{1, 2}));
  // More CPUs asked than the host has: all of them, shared.
  EXPECT_EQ(LeastLoadedCpus(host, load, 4), host);
  EXPECT_EQ(LeastLoadedCpus(host, load, 9), host);
}

}  // namespace
}  // namespace hpc::runtime::local
