#include "slurm/config.h"

#include <gtest/gtest.h>

#include "slurm/rest_client.h"

namespace hpc::slurm {
namespace {

api::SlurmCluster Cluster() {
  api::SlurmCluster c;
  c.metadata.name = "c1";
  c.spec.subnet = "10.1.2.0/24";
  return c;
}

api::NodeSet NodeSet(const std::string& name, int gpus = 0) {
  api::NodeSet n;
  n.metadata.name = name;
  n.spec.resources = {4, 8000, gpus};
  return n;
}

bool HasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

// Guards the slurm.conf lines dynamic nodes depend on (DESIGN field notes).
TEST(SlurmConfTest, NodeSetBecomesNodesetAndPartition) {
  auto ns = NodeSet("cpu");
  ns.spec.partition.is_default = true;
  ns.spec.partition.options["AllowGroups"] = "alice";
  std::string conf = RenderSlurmConf(Cluster(), {ns});
  EXPECT_TRUE(HasLine(conf, "NodeSet=cpu Feature=cpu")) << conf;
  EXPECT_TRUE(HasLine(conf, "PartitionName=cpu Nodes=cpu Default=YES MaxTime=INFINITE State=UP AllowGroups=alice"))
      << conf;
  EXPECT_TRUE(HasLine(conf, "MaxNodeCount=64"));
  EXPECT_TRUE(HasLine(conf, "SlurmctldHost=c1-controller"));
  EXPECT_TRUE(HasLine(conf, "AuthAltTypes=auth/jwt"));
  EXPECT_FALSE(HasLine(conf, "GresTypes=gpu"));
}

TEST(SlurmConfTest, RenderingIsDeterministicAndOrdered) {
  std::string a = RenderSlurmConf(Cluster(), {NodeSet("b"), NodeSet("a")});
  std::string b = RenderSlurmConf(Cluster(), {NodeSet("a"), NodeSet("b")});
  EXPECT_EQ(a, b);
  EXPECT_LT(a.find("NodeSet=a "), a.find("NodeSet=b "));
}

TEST(SlurmConfTest, SchedulingSettingsAndGpus) {
  auto c = Cluster();
  c.spec.scheduler_parameters = {"bf_interval=5"};
  c.spec.priority_type = "priority/multifactor";
  c.spec.extra_config = {"PriorityWeightFairshare=1000"};
  std::string conf = RenderSlurmConf(c, {NodeSet("gpu", 2)});
  EXPECT_NE(conf.find("SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000,sched_interval=1,bf_interval=5\n"),
            std::string::npos)
      << conf;
  EXPECT_TRUE(HasLine(conf, "PriorityType=priority/multifactor"));
  EXPECT_TRUE(HasLine(conf, "PriorityWeightFairshare=1000"));
  EXPECT_TRUE(HasLine(conf, "GresTypes=gpu"));
}

TEST(SlurmConfTest, DynamicNodeConfCarriesShapeAndFeatures) {
  auto ns = NodeSet("gpu", 1);
  ns.spec.features = {"a100"};
  EXPECT_EQ(DynamicNodeConf(ns),
            "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 Feature=gpu,a100 "
            "Gres=gpu:1");
}

// Guards the parsing of slurmrestd v0.0.38 node answers (shape captured from Slurm 22.05.8).
TEST(RestClientTest, ParsesNodes) {
  const char* body = R"({"meta":{},"errors":[],"nodes":[
    {"name":"cpu-0","state":"idle","state_flags":["DRAIN","DYNAMIC_NORM"],"reason":"hpcplane: x",
     "features":"cpu,fast","cpus":2,"alloc_cpus":0},
    {"name":"cpu-1","state":"allocated","state_flags":["DYNAMIC_NORM"],"reason":"","features":"cpu","cpus":2,
     "alloc_cpus":2}]})";
  auto nodes = RestClient::ParseNodes(body);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_TRUE((*nodes)[0].Drain());
  EXPECT_FALSE((*nodes)[0].Busy());
  EXPECT_EQ((*nodes)[0].features.count("fast"), 1u);
  EXPECT_TRUE((*nodes)[1].Busy());
}

TEST(RestClientTest, ReportsErrorsInBody) {
  auto nodes = RestClient::ParseNodes(R"({"errors":[{"error":"Unable to query nodes"}],"nodes":[]})");
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().message(), "slurmrestd: Unable to query nodes");
  EXPECT_FALSE(RestClient::ParseNodes("<html>").ok());
}

}  // namespace
}  // namespace hpc::slurm
