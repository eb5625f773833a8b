// Distributed training as the seeds run it: a PyTorch DDP job (examples/ddp) submitted with sbatch
// across two workers whose nodeset runs an environment with Debian's PyTorch
// (examples/pytorch-environment.yaml, built into the tests' image store by the images fixture).
#include <gtest/gtest.h>

#include <regex>
#include <set>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

const std::string kExamples = std::string(HPCPLANE_SOURCE_DIR) + "/examples";

struct RankLine {
  int rank = -1, world = 0;
  std::string host, weights;
  double first_loss = 0, last_loss = 0;
};

// "rank 0 of 2 on cpu-0: loss 13.812615 -> 0.028688, weights fd3a05586681aa53, 333.9 steps/s"
std::vector<RankLine> RankLines(const std::string& out) {
  static const std::regex re(R"(^rank (\d+) of (\d+) on (\S+): loss ([0-9.]+) -> ([0-9.]+), weights ([0-9a-f]+), )");
  std::vector<RankLine> lines;
  for (const auto& line : SplitLines(out)) {
    std::smatch m;
    if (!std::regex_search(line, m, re)) continue;
    lines.push_back({std::stoi(m[1]), std::stoi(m[2]), m[3], m[6], std::stod(m[4]), std::stod(m[5])});
  }
  return lines;
}

TEST(Training, ADataParallelJobAcrossTwoWorkersKeepsItsRanksInStepAndLearns) {
  ClusterOptions o;
  o.extra_nodeset_spec = "  environment: pytorch-26.05\n";
  o.memory_mib = 1000;  // a rank's Python with PyTorch holds ~300 MiB; its job gets the worker's memory
  TestCluster c("ddp", o);
  auto built = c.Cli({"environments", "build", "-f", kExamples + "/pytorch-environment.yaml"}, 900s);
  ASSERT_EQ(built.exit_code, 0) << built.out << built.err;
  auto up = c.Up();
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  for (const char* f : {"train.py", "train.sbatch"}) {
    auto text = files::Read(kExamples + "/ddp/" + f);
    ASSERT_TRUE(text.ok()) << f;
    ASSERT_TRUE(files::WriteAtomic(c.SharedVolume() + "/" + f, *text, 0755).ok()) << f;
  }
  // As a user submits it: sbatch from the directory holding the script, waiting for the end.
  auto job = c.Login("alice", {"sh", "-c", "cd /shared && sbatch --wait -o ddp.out train.sbatch"}, 300s);
  const std::string out = files::Read(c.SharedVolume() + "/ddp.out").value_or("");
  ASSERT_EQ(job.exit_code, 0) << job.out << job.err << out;
  const auto ranks = RankLines(out);
  ASSERT_EQ(ranks.size(), 2u) << out;
  std::set<int> seen;
  std::set<std::string> hosts;
  for (const auto& r : ranks) {
    seen.insert(r.rank);
    hosts.insert(r.host);
    EXPECT_EQ(r.world, 2) << out;
    // DDP averaged every step's gradients over both ranks: the same weights on both.
    EXPECT_EQ(r.weights, ranks[0].weights) << "ranks disagree: " << out;
    // It learned: the loss over both shards fell to under a twentieth.
    EXPECT_GT(r.first_loss, 1.0) << out;
    EXPECT_LT(r.last_loss, r.first_loss / 20) << out;
  }
  EXPECT_EQ(seen, (std::set<int>{0, 1})) << out;
  EXPECT_EQ(hosts.size(), 2u) << "two workers: " << out;
  // Accounted as any job: its two-node step completed.
  EXPECT_TRUE(WaitFor(
      [&] {
        auto r = c.Login("alice", {"sacct", "-n", "-X", "-P", "--name=ddp", "--format=State,NNodes"});
        return r.out.find("COMPLETED|2") != std::string::npos;
      },
      60s));
}

}  // namespace
}  // namespace hpc::it
