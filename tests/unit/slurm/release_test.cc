#include "slurm/release.h"

#include <gtest/gtest.h>

#include "api/types.h"
#include "slurm/config.h"
#include "slurm/rest_client.h"

namespace hpc::slurm {
namespace {

Release R(const std::string& v) { return Release::Parse(v).value(); }

bool HasConfLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

TEST(ReleaseTest, ParsesSlurmAndDebianVersions) {
  EXPECT_EQ(R("26.05.5").ToString(), "26.05.5");
  EXPECT_EQ(R("26.05.5-1").Series(), "26.05");
  EXPECT_EQ(R("22.05.8-4+deb12u3"), (Release{22, 5, 8}));
  EXPECT_EQ(R("24.11.5-4+deb13u1").minor, 11);
  auto bad = Release::Parse("slurm");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("\"slurm\""), std::string::npos);
}

TEST(ReleaseTest, RestPluginsAndApiFollowTheRelease) {
  EXPECT_FALSE(R("22.05.8").RestPluginsByComponent());
  EXPECT_EQ(R("22.05.8").RestApiPath(), "/slurm/v0.0.38");
  EXPECT_TRUE(R("24.11.5").RestPluginsByComponent());
  EXPECT_EQ(R("24.11.5").RestApiPath(), "/slurm/v0.0.42");
  EXPECT_EQ(R("26.05.5").RestApiPath(), "/slurm/v0.0.42");
}

// Slurm upgrades from the three previous major releases only, and never downgrades.
TEST(ReleaseTest, UpgradesCrossAtMostThreeReleasesAndNeverGoBack) {
  EXPECT_TRUE(CheckUpgrade(R("24.11.5"), R("26.05.5")).ok());
  EXPECT_TRUE(CheckUpgrade(R("25.05.1"), R("26.05.5")).ok());
  EXPECT_TRUE(CheckUpgrade(R("26.05.1"), R("26.05.5")).ok());
  EXPECT_TRUE(CheckUpgrade(R("23.11.1"), R("24.11.5")).ok());
  Status too_far = CheckUpgrade(R("22.05.8"), R("26.05.5"));
  ASSERT_FALSE(too_far.ok());
  EXPECT_EQ(too_far.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(too_far.message().find("22.05"), std::string::npos);
  EXPECT_NE(too_far.message().find("26.05"), std::string::npos);
  EXPECT_FALSE(CheckUpgrade(R("22.05.8"), R("24.11.5")).ok());
  Status down = CheckUpgrade(R("26.05.5"), R("24.11.5"));
  ASSERT_FALSE(down.ok());
  EXPECT_NE(down.message().find("downgrade"), std::string::npos);
}

TEST(ReleaseTest, SlurmConfDropsRetiredOptionsAndBoundsTheHealthCheckOnNewReleases) {
  api::SlurmCluster c;
  c.metadata.name = "c1";
  c.spec.health_checks.interval_seconds = 30;
  c.spec.health_checks.timeout_seconds = 60;
  const std::string old_conf = RenderSlurmConf(c, {}, JobCgroups::kV1, R("22.05.8"));
  const std::string new_conf = RenderSlurmConf(c, {}, JobCgroups::kV1, R("26.05.5"));
  EXPECT_EQ(old_conf.find("HealthCheckTimeout="), std::string::npos);
  // 26.05 refuses a timeout at or above the interval (its default is 60 s).
  EXPECT_TRUE(HasConfLine(new_conf, "HealthCheckTimeout=29")) << new_conf;
  EXPECT_TRUE(HasConfLine(RenderCgroupConf(JobCgroups::kV1, false, R("22.05.8")), "CgroupAutomount=no"));
  EXPECT_EQ(RenderCgroupConf(JobCgroups::kV1, false, R("26.05.5")).find("CgroupAutomount"), std::string::npos);
}

// 25.11 on, slurmctld serves OpenMetrics itself; an admin's own MetricsType is theirs.
TEST(ReleaseTest, SlurmConfTurnsOnSlurmsOwnMetricsWhereTheReleaseHasThem) {
  api::SlurmCluster c;
  c.metadata.name = "c1";
  EXPECT_EQ(RenderSlurmConf(c, {}, JobCgroups::kNone, R("24.11.5")).find("MetricsType"), std::string::npos);
  EXPECT_TRUE(HasConfLine(RenderSlurmConf(c, {}, JobCgroups::kNone, R("26.05.5")), "MetricsType=metrics/openmetrics"));
  c.spec.extra_config = {"MetricsType=metrics/none"};
  const std::string admin = RenderSlurmConf(c, {}, JobCgroups::kNone, R("26.05.5"));
  EXPECT_EQ(admin.find("metrics/openmetrics"), std::string::npos) << admin;
  EXPECT_TRUE(HasConfLine(admin, "MetricsType=metrics/none"));
}

// Data parser v0.0.40 on (Slurm 23.11 on): numbers as {"set","infinite","number"}, states as
// lists whose first entry is the base state, features as lists, the partition state nested.
TEST(RestClientTest, ParsesNodesOfNewReleases) {
  const char* body = R"({"meta":{"slurm":{"release":"26.05.5"}},"errors":[],"nodes":[
    {"name":"cpu-0","state":["IDLE","DRAIN","DYNAMIC_NORM"],"reason":"hpcplane: x",
     "reason_changed_at":{"set":true,"infinite":false,"number":1700000000},"extra":"",
     "features":["cpu","fast"],"partitions":["cpu"],"cpus":2,"alloc_cpus":0,
     "last_busy":{"set":true,"infinite":false,"number":1700000100}},
    {"name":"cpu-1","state":["MIXED","DYNAMIC_NORM"],"features":["cpu"],"cpus":2,"alloc_cpus":1,
     "reason_changed_at":{"set":false,"infinite":false,"number":0}}]})";
  auto nodes = RestClient::ParseNodes(body);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 2u);
  const auto& a = (*nodes)[0];
  EXPECT_EQ(a.state, "idle");
  EXPECT_TRUE(a.Drain());
  EXPECT_EQ(a.flags.count("DYNAMIC_NORM"), 1u);
  EXPECT_EQ(a.features, (std::set<std::string>{"cpu", "fast"}));
  EXPECT_EQ(a.partitions.count("cpu"), 1u);
  EXPECT_EQ(a.reason_changed_at, 1700000000);
  EXPECT_EQ(a.last_busy, 1700000100);
  EXPECT_FALSE(a.Busy());
  EXPECT_EQ((*nodes)[1].state, "mixed");
  EXPECT_TRUE((*nodes)[1].Busy());
  EXPECT_EQ((*nodes)[1].reason_changed_at, 0);
}

TEST(RestClientTest, ParsesJobsAndPartitionsOfNewReleases) {
  const char* body = R"({"jobs":[
    {"job_id":12,"user_name":"alice","job_state":["PENDING"],"state_reason":"PartitionConfig","partition":"cpu",
     "nodes":"","submit_time":{"set":true,"infinite":false,"number":100},
     "start_time":{"set":true,"infinite":false,"number":0},"node_count":{"set":true,"infinite":false,"number":2},
     "cpus":{"set":true,"infinite":false,"number":4},"minimum_cpus_per_node":{"set":true,"infinite":false,"number":2},
     "memory_per_node":{"set":true,"infinite":false,"number":500},
     "memory_per_cpu":{"set":false,"infinite":false,"number":0},"tres_per_node":"gres/gpu:1",
     "shared":[],"exclusive":["true"],"array_task_string":"","array_max_tasks":{"set":true,"infinite":false,"number":0},
     "restart_cnt":0,"dependency":"","priority":{"set":true,"infinite":false,"number":0}},
    {"job_id":13,"job_state":["RUNNING"],"priority":{"set":true,"infinite":false,"number":4294901758},
     "time_limit":{"set":false,"infinite":true,"number":0}}],"errors":[]})";
  auto jobs = RestClient::ParseJobs(body);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  const auto& j = (*jobs)[0];
  EXPECT_EQ(j.state, "PENDING");
  EXPECT_EQ(j.submit_time, 100);
  EXPECT_EQ(j.node_count, 2);
  EXPECT_EQ(j.cpus, 4);
  EXPECT_EQ(j.min_cpus_per_node, 2);
  EXPECT_EQ(j.memory_per_node, 500);
  EXPECT_EQ(j.memory_per_cpu, 0);
  EXPECT_EQ(j.gpus_per_node, 1);
  EXPECT_TRUE(j.exclusive);
  EXPECT_TRUE(j.Held());
  EXPECT_EQ((*jobs)[1].state, "RUNNING");
  EXPECT_FALSE((*jobs)[1].Held());

  auto parts = RestClient::ParsePartitions(
      R"({"partitions":[{"name":"cpu","partition":{"state":["UP"]}},{"name":"_hpcplane","partition":{"state":["INACTIVE"]}}]})");
  ASSERT_TRUE(parts.ok()) << parts.status().message();
  ASSERT_EQ(parts->size(), 2u);
  EXPECT_EQ((*parts)[0].state, "UP");
  EXPECT_EQ((*parts)[1].state, "INACTIVE");
}

}  // namespace
}  // namespace hpc::slurm
