// The live view's pieces without a cluster: the queue as squeue prints it, the view assembled
// from Slurm's nodes and the operator's nodesets, and its JSON form both ways.
#include "messages/live_cluster.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "agent/live_cluster_reader.h"

namespace hpc::cp {
namespace {

TEST(LiveQueue, RunningJobsComeFirstThenPendingOnesByPriority) {
  // %A|%u|%a|%P|%T|%r|%D|%C|%V|%S|%Q|%j
  const std::string out =
      "11|ann|astro|cpu|PENDING|Priority|1|1|1700000010|0|100|low\n"
      "12|bob|bio|cpu|PENDING|Resources|2|4|1700000020|1700000500|900|high|with|bars\n"
      "10|ann|astro|cpu|RUNNING|None|2|2|1700000000|1700000005|50|running\n";
  int64_t total = 0;
  auto q = ParseLiveQueue(out, &total);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(total, 3);
  ASSERT_EQ(q->size(), 3u);
  EXPECT_EQ((*q)[0].job_id, 10);
  EXPECT_EQ((*q)[1].job_id, 12) << "higher priority first";
  EXPECT_EQ((*q)[1].name, "high|with|bars") << "the name is the rest of the line";
  EXPECT_EQ((*q)[1].reason, "Resources");
  EXPECT_EQ((*q)[1].account, "bio");
  EXPECT_EQ((*q)[1].nodes, 2);
  EXPECT_EQ((*q)[1].cpus, 4);
  EXPECT_EQ((*q)[1].start_time, 1700000500);
  EXPECT_EQ((*q)[2].job_id, 11);
}

TEST(LiveQueue, KeepsAtMostTheLimitAndCountsTheRest) {
  std::string out;
  for (size_t i = 1; i <= kMaxQueuedJobs + 5; ++i) out += std::to_string(i) + "|u|a|p|PENDING|Priority|1|1|0|0|1|x\n";
  int64_t total = 0;
  auto q = ParseLiveQueue(out, &total);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->size(), kMaxQueuedJobs);
  EXPECT_EQ(total, static_cast<int64_t>(kMaxQueuedJobs + 5));
}

TEST(LiveQueue, AMalformedLineIsAnErrorNamingIt) {
  int64_t total = 0;
  auto q = ParseLiveQueue("squeue: error: Invalid user\n", &total);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("line 1"), std::string::npos) << q.status().message();
}

TEST(LivePartitions, EachPartitionOnceWithItsStateUpperCase) {
  auto p = ParseLivePartitions("cpu|up\ncpu|up\nann-astro|down\nold|inact\n");
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].name, "cpu");
  EXPECT_EQ((*p)[0].state, "UP");
  EXPECT_EQ((*p)[1].state, "DOWN");
  EXPECT_EQ((*p)[2].state, "INACT");
  EXPECT_FALSE(ParseLivePartitions("sinfo: error: something\n").ok());
}

TEST(LiveCluster, NodesBelongToTheNodesetNamedByAFeatureAndPartitionsCountThem) {
  slurm::SlurmNode a, b, other;
  a.name = "c1-cpu-0", a.state = "idle", a.features = {"cpu"}, a.partitions = {"cpu", "all"}, a.cpus = 4;
  b.name = "c1-ann-astro-0", b.state = "mixed", b.flags = {"DRAIN"}, b.reason = "maint";
  b.features = {"ann-astro"}, b.partitions = {"ann-astro"}, b.cpus = 2, b.alloc_cpus = 1;
  b.memory_mib = 1000, b.alloc_memory_mib = 500;
  other.name = "admin-node", other.features = {"bigmem"}, other.partitions = {"all"}, other.cpus = 8;
  std::vector<LiveNodeSet> nodesets = {{"cpu", 1, 1, 0, 1, 0}, {"ann-astro", 1, 1, 1, 0, 0}};
  LiveCluster c = AssembleLiveCluster({a, b, other}, {{"cpu", "UP"}, {"all", "UP"}, {"ann-astro", "UP"}}, {}, 0,
                                      nodesets, 1700000000);
  ASSERT_EQ(c.nodes.size(), 3u);
  EXPECT_EQ(c.nodes[0].nodeset, "cpu");
  EXPECT_EQ(c.nodes[1].nodeset, "ann-astro");
  EXPECT_EQ(c.nodes[1].flags, std::vector<std::string>{"DRAIN"});
  EXPECT_EQ(c.nodes[1].memory_allocated_mib, 500);
  EXPECT_EQ(c.nodes[2].nodeset, "") << "a node of the admin's own is no nodeset's";
  std::map<std::string, std::pair<int, int>> parts;
  for (const auto& p : c.partitions) parts[p.name] = {p.nodes, p.cpus};
  EXPECT_EQ(parts["all"], std::make_pair(2, 12));
  EXPECT_EQ(parts["cpu"], std::make_pair(1, 4));
  EXPECT_EQ(c.collected_at, 1700000000);
}

TEST(LiveCluster, JsonRoundTrips) {
  LiveCluster c;
  c.collected_at = 5;
  c.nodes.push_back({"n0", "cpu", "idle", {"DRAIN"}, "why", 4, 2, 1000, 500, {"cpu"}, {}});
  c.nodes.push_back({"g0",
                     "gpu",
                     "mixed",
                     {},
                     "",
                     8,
                     8,
                     1000,
                     500,
                     {"gpu"},
                     {{"00000000:3b:00.0", 87, 40000, 81559, 61}, {"00000000:86:00.0", -1, -1, -1, -1}}});
  c.partitions.push_back({"cpu", "UP", 1, 4});
  c.queue.push_back({7, "job", "ann", "astro", "cpu", "PENDING", "Resources", 2, 4, 100, 200});
  c.queue_total = 3;
  c.nodesets.push_back({"cpu", 2, 1, 1, 0, 0});
  auto back = LiveClusterFromJson(ToJson(c));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJson(*back), ToJson(c));
  ASSERT_EQ(back->nodes[1].gpus.size(), 2u);
  EXPECT_EQ(back->nodes[1].gpus[1].temperature_celsius, -1) << "unknown stays unknown, not 0";
  EXPECT_TRUE(ToJson(c)["nodes"][1]["gpus"][1]["temperatureCelsius"].is_null());
}

// A worker's GPUs come from its last health report, in the node's Extra field.
TEST(LiveCluster, AWorkersGpusComeFromItsHealthReport) {
  slurm::SlurmNode g;
  g.name = "c1-gpu-0", g.state = "mixed", g.features = {"gpu"}, g.partitions = {"gpu"}, g.cpus = 8;
  g.extra = "hpcplane-health:1700000000:ok|gpus=00000000:3b:00.0,87,40000,81559,61";
  LiveCluster c = AssembleLiveCluster({g}, {{"gpu", "UP"}}, {}, 0, {{"gpu", 1, 1, 1, 0, 0}}, 1700000000);
  ASSERT_EQ(c.nodes.size(), 1u);
  ASSERT_EQ(c.nodes[0].gpus.size(), 1u);
  EXPECT_EQ(c.nodes[0].gpus[0].bus_id, "00000000:3b:00.0");
  EXPECT_EQ(c.nodes[0].gpus[0].utilization_percent, 87);
  EXPECT_EQ(c.nodes[0].gpus[0].temperature_celsius, 61);
}

TEST(LiveCluster, AGpuValueOfTheWrongTypeIsRefusedByItsPath) {
  nlohmann::json j = {{"nodes", {{{"name", "g0"}, {"gpus", {{{"busId", "x"}, {"memoryUsedMiB", "lots"}}}}}}}};
  auto r = LiveClusterFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "nodes[0].gpus[0].memoryUsedMiB");
}

TEST(LiveCluster, AnEncodedViewTooLongLosesTheQueuesTailAndKeepsItsTotal) {
  LiveCluster c;
  for (int i = 0; i < 1000; ++i) {
    LiveJob j;
    j.job_id = i + 1, j.name = std::string(400, 'n'), j.user = "ann", j.state = "PENDING";
    c.queue.push_back(j);
  }
  c.queue_total = 1000;
  const std::string whole = EncodeLiveCluster(c);
  EXPECT_EQ(nlohmann::json::parse(whole)["queue"].size(), 1000u) << "it fits the default bound";
  const std::string cut = EncodeLiveCluster(c, 100000);
  ASSERT_LE(cut.size(), 100000u);
  auto back = LiveClusterFromJson(nlohmann::json::parse(cut));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_GT(back->queue.size(), 0u);
  EXPECT_LT(back->queue.size(), 1000u);
  EXPECT_EQ(back->queue.front().job_id, 1) << "the head of the queue stays";
  EXPECT_EQ(back->queue_total, 1000);
}

// A view whose GPU numbers alone would not fit keeps its nodes without them.
TEST(LiveCluster, AnEncodedViewTooLongWithNoQueueLeftLosesTheGpuNumbers) {
  LiveCluster c;
  for (int i = 0; i < 100; ++i) {
    LiveNode n;
    n.name = fmt::format("gpu-{}", i);
    for (int g = 0; g < 16; ++g) n.gpus.push_back({fmt::format("00000000:{:02x}:00.0", g), 50, 1, 2, 3});
    c.nodes.push_back(n);
  }
  ASSERT_GT(EncodeLiveCluster(c).size(), 100000u);
  auto back = LiveClusterFromJson(nlohmann::json::parse(EncodeLiveCluster(c, 100000)));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->nodes.size(), 100u);
  EXPECT_TRUE(back->nodes[0].gpus.empty());
}

// `scontrol ping` as 26.05 prints it with a backup, run as root (the banner of a controller down
// is no controller); the cluster's status says which one serves.
TEST(LiveCluster, ControllersComeFromScontrolPingInTheirOrderAndRoundTrip) {
  const std::string ping =
      "Slurmctld(primary) at c1-controller is DOWN\n"
      "Slurmctld(backup) at c1-controller-backup is UP\n"
      "*****************************************\n"
      "** RESTORE SLURMCTLD DAEMON TO SERVICE **\n"
      "*****************************************\n";
  auto controllers = ParseControllerPing(ping, "c1-controller-backup");
  ASSERT_EQ(controllers.size(), 2u);
  EXPECT_EQ(controllers[0].name, "c1-controller");
  EXPECT_EQ(controllers[0].role, "primary");
  EXPECT_FALSE(controllers[0].responding);
  EXPECT_FALSE(controllers[0].serving);
  EXPECT_EQ(controllers[1].role, "backup");
  EXPECT_TRUE(controllers[1].responding);
  EXPECT_TRUE(controllers[1].serving);
  EXPECT_TRUE(ParseControllerPing("", "c1-controller").empty());

  LiveCluster view;
  view.controllers = controllers;
  auto back = LiveClusterFromJson(ToJson(view));
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->controllers.size(), 2u);
  EXPECT_EQ(back->controllers[1].name, "c1-controller-backup");
  EXPECT_TRUE(back->controllers[1].serving);
  auto bad = ToJson(view);
  bad["controllers"][0]["serving"] = "yes";
  auto refused = LiveClusterFromJson(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("controllers[0].serving"), std::string::npos) << refused.status().message();
}

TEST(LiveCluster, TooManyNodesIsRefused) {
  nlohmann::json j = {{"nodes", nlohmann::json::array()}};
  for (size_t i = 0; i <= kMaxLiveNodes; ++i) j["nodes"].push_back({{"name", "n"}});
  auto r = LiveClusterFromJson(j);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().field(), "nodes");
}

}  // namespace
}  // namespace hpc::cp
