#include "slurm/config.h"

#include <algorithm>

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
  EXPECT_TRUE(HasLine(
      conf, "PartitionName=cpu Nodes=cpu Default=YES MaxTime=INFINITE State=UP DefMemPerCPU=2000 AllowGroups=alice"))
      << conf;
  EXPECT_TRUE(HasLine(conf, "MaxNodeCount=64"));
  EXPECT_TRUE(HasLine(conf, "SlurmctldHost=c1-controller"));
  EXPECT_TRUE(HasLine(conf, "AuthAltTypes=auth/jwt"));
  EXPECT_FALSE(HasLine(conf, "GresTypes=gpu"));
}

// A backup controller is the second SlurmctldHost, after the primary (Slurm's order of
// succession), and takes over once the primary has not answered for 6 s instead of 30.
TEST(SlurmConfTest, ABackupControllerIsTheSecondSlurmctldHostWithAShorterTimeout) {
  auto c = Cluster();
  std::string conf = RenderSlurmConf(c, {});
  EXPECT_TRUE(HasLine(conf, "SlurmctldTimeout=30")) << conf;
  EXPECT_EQ(conf.find("c1-controller-backup"), std::string::npos);
  EXPECT_EQ(ConfServers(c), "c1-controller:6817");
  c.spec.backup_controller = true;
  conf = RenderSlurmConf(c, {});
  const auto primary = conf.find("\nSlurmctldHost=c1-controller\n");
  const auto backup = conf.find("\nSlurmctldHost=c1-controller-backup\n");
  ASSERT_NE(primary, std::string::npos) << conf;
  ASSERT_NE(backup, std::string::npos) << conf;
  EXPECT_LT(primary, backup) << "the primary first";
  EXPECT_TRUE(HasLine(conf, "SlurmctldTimeout=6")) << conf;
  EXPECT_EQ(ConfServers(c), "c1-controller:6817,c1-controller-backup:6817");
}

// A job without --mem gets its CPUs' share of the worker (8000 MiB over 4 CPUs), not all of it, so
// 1-CPU jobs share a worker; an admin's own default, per partition or cluster-wide, stands alone.
TEST(SlurmConfTest, JobsWithoutMemoryGetTheirCpusShareUnlessTheAdminChose) {
  auto has_default = [](const std::vector<std::string>& opts, const std::string& want) {
    return std::find(opts.begin(), opts.end(), want) != opts.end();
  };
  auto ns = NodeSet("cpu");
  EXPECT_TRUE(has_default(PartitionOptions(ns, false), "DefMemPerCPU=2000"));
  ns.spec.resources = {3, 1000, 0};
  EXPECT_TRUE(has_default(PartitionOptions(ns, false), "DefMemPerCPU=333"));

  auto per_node = NodeSet("cpu");
  per_node.spec.partition.options["DefMemPerNode"] = "500";
  auto opts = PartitionOptions(per_node, false);
  EXPECT_FALSE(std::any_of(opts.begin(), opts.end(), [](const auto& o) { return o.rfind("DefMemPerCPU=", 0) == 0; }));
  EXPECT_TRUE(has_default(opts, "DefMemPerNode=500"));

  auto c = Cluster();
  EXPECT_FALSE(ClusterSetsDefaultMemory(c));
  c.spec.extra_config = {"defmempercpu=100"};
  EXPECT_TRUE(ClusterSetsDefaultMemory(c));
  std::string conf = RenderSlurmConf(c, {NodeSet("cpu")});
  EXPECT_EQ(conf.find("DefMemPerCPU=2000"), std::string::npos) << conf;
  opts = PartitionOptions(NodeSet("cpu"), true);
  EXPECT_FALSE(std::any_of(opts.begin(), opts.end(), [](const auto& o) { return o.rfind("DefMemPerCPU=", 0) == 0; }));
}

// 23.11 on: Slurm's own authentication and credentials, no munge; JWTs (slurmrestd,
// workspaces) either way. slurmdbd.conf says the same as slurm.conf.
TEST(SlurmConfTest, AuthSlurmFrom2311AndMungeBefore) {
  const std::string modern = RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{26, 5, 5});
  EXPECT_TRUE(HasLine(modern, "AuthType=auth/slurm")) << modern;
  EXPECT_TRUE(HasLine(modern, "CredType=cred/slurm"));
  EXPECT_EQ(modern.find("munge"), std::string::npos);
  EXPECT_TRUE(HasLine(modern, "AuthAltTypes=auth/jwt"));
  const std::string dbd = RenderSlurmdbdConf(Cluster(), "pw", DefaultAuth(Release{24, 11, 5}));
  EXPECT_TRUE(HasLine(dbd, "AuthType=auth/slurm")) << dbd;
  EXPECT_EQ(dbd.find("munge"), std::string::npos);
  EXPECT_EQ(dbd.find("CredType"), std::string::npos) << "slurmdbd refuses the key";

  const std::string old = RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{22, 5, 8});
  EXPECT_TRUE(HasLine(old, "AuthType=auth/munge")) << old;
  EXPECT_TRUE(HasLine(old, std::string("AuthInfo=socket=") + kMungeSocketDir + "/munge.socket.2"));
  EXPECT_EQ(old.find("CredType"), std::string::npos) << "22.05's default, cred/munge";
  EXPECT_TRUE(HasLine(RenderSlurmdbdConf(Cluster(), "pw", DefaultAuth(Release{22, 5, 8})), "AuthType=auth/munge"));
  // A cluster that keeps munge on 26.05 (op::BuildInputs::keep_munge): munge, no configless.
  const std::string kept = RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{26, 5, 5}, Auth::kMunge);
  EXPECT_TRUE(HasLine(kept, "AuthType=auth/munge")) << kept;
  EXPECT_EQ(kept.find("enable_configless"), std::string::npos);
}

// A rolling upgrade's mixed releases: slurm.conf written for 26.05 but read by a 24.11 slurmd
// holds no key 24.11 refuses (HealthCheckTimeout and MetricsType came with 25.11); what 26.05's
// launches need (MpiDefault=pmi2, which 24.11 has too) stays.
TEST(SlurmConfTest, AFileAnOlderSlurmdReadsHoldsNoKeyItDoesNotKnow) {
  const std::string alone = RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{26, 5, 5});
  EXPECT_NE(alone.find("HealthCheckTimeout="), std::string::npos) << alone;
  EXPECT_TRUE(HasLine(alone, "MetricsType=metrics/openmetrics"));
  const std::string mixed =
      RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{26, 5, 5}, std::nullopt, Release{24, 11, 5});
  EXPECT_EQ(mixed.find("HealthCheckTimeout"), std::string::npos) << mixed;
  EXPECT_EQ(mixed.find("MetricsType"), std::string::npos);
  EXPECT_TRUE(HasLine(mixed, "MpiDefault=pmi2"));
  EXPECT_TRUE(HasLine(mixed, "AuthType=auth/slurm"));
}

// Configless (23.11 on) needs enable_configless; an admin's own SlurmctldParameters are merged
// into the same line, not lost to it or replacing it.
TEST(SlurmConfTest, ConfiglessIsEnabledBesideTheAdminsSlurmctldParameters) {
  EXPECT_TRUE(HasLine(RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{26, 5, 5}),
                      "SlurmctldParameters=enable_configless"));
  EXPECT_EQ(RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{22, 5, 8}).find("SlurmctldParameters"),
            std::string::npos);
  auto c = Cluster();
  c.spec.extra_config = {"SlurmctldParameters=idle_on_node_suspend", "SlurmdTimeout=30"};
  const std::string conf = RenderSlurmConf(c, {}, JobCgroups::kNone, Release{26, 5, 5});
  EXPECT_TRUE(HasLine(conf, "SlurmctldParameters=enable_configless,idle_on_node_suspend")) << conf;
  EXPECT_EQ(conf.find("SlurmctldParameters"), conf.rfind("SlurmctldParameters")) << "one line";
  EXPECT_TRUE(HasLine(conf, "SlurmdTimeout=30"));
  EXPECT_TRUE(HasLine(RenderSlurmConf(c, {}, JobCgroups::kNone, Release{22, 5, 8}),
                      "SlurmctldParameters=idle_on_node_suspend"));
}

// `srun ./mpi_program` speaks what the release's images' default MPI expects: PMIx (Open MPI with
// Debian's mpi/pmix) up to 24.11, PMI-2 (MPICH) on 26.05, whose Debian build has no mpi/pmix.
// An admin's own MpiDefault stands alone.
TEST(SlurmConfTest, MpiDefaultFollowsTheReleaseUnlessTheAdminChose) {
  EXPECT_TRUE(HasLine(RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{22, 5, 8}), "MpiDefault=pmix"));
  EXPECT_TRUE(HasLine(RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{24, 11, 5}), "MpiDefault=pmix"));
  EXPECT_TRUE(HasLine(RenderSlurmConf(Cluster(), {}, JobCgroups::kNone, Release{26, 5, 5}), "MpiDefault=pmi2"));
  auto c = Cluster();
  c.spec.extra_config = {"mpidefault=none"};
  const std::string conf = RenderSlurmConf(c, {}, JobCgroups::kNone, Release{26, 5, 5});
  EXPECT_TRUE(HasLine(conf, "mpidefault=none")) << conf;
  EXPECT_EQ(conf.find("MpiDefault="), std::string::npos) << conf;
}

TEST(SlurmConfTest, RenderingIsDeterministicAndOrdered) {
  std::string a = RenderSlurmConf(Cluster(), {NodeSet("b"), NodeSet("a")});
  std::string b = RenderSlurmConf(Cluster(), {NodeSet("a"), NodeSet("b")});
  EXPECT_EQ(a, b);
  EXPECT_LT(a.find("NodeSet=a "), a.find("NodeSet=b "));
}

// Slurm reads the first occurrence of a key, so an admin's value must replace hpcplane's default
// rather than follow it.
TEST(SlurmConfTest, TheAdminsSchedulerParametersReplaceTheDefaults) {
  EXPECT_EQ(SchedulerParameters({}), "batch_sched_delay=0,sched_min_interval=100000,sched_interval=1,bf_interval=1");
  EXPECT_EQ(SchedulerParameters({"sched_interval=60", "bf_continue", "bf_interval=30"}),
            "batch_sched_delay=0,sched_min_interval=100000,sched_interval=60,bf_continue,bf_interval=30");
}

TEST(SlurmConfTest, SchedulingSettingsAndGpus) {
  auto c = Cluster();
  c.spec.scheduler_parameters = {"bf_interval=5"};
  c.spec.priority_type = "priority/multifactor";
  c.spec.extra_config = {"PriorityWeightFairshare=1000"};
  std::string conf = RenderSlurmConf(c, {NodeSet("gpu", 2)});
  EXPECT_TRUE(
      HasLine(conf, "SchedulerParameters=batch_sched_delay=0,sched_min_interval=100000,sched_interval=1,bf_interval=5"))
      << conf;
  EXPECT_TRUE(HasLine(conf, "PriorityType=priority/multifactor"));
  EXPECT_TRUE(HasLine(conf, "PriorityWeightFairshare=1000"));
  EXPECT_TRUE(HasLine(conf, "GresTypes=gpu"));
}

// slurmctld's submit hook is the operator's change probe; an admin's own submit plugins win.
TEST(SlurmConfTest, SubmitHookTouchesTheMarkerUnlessTheAdminHasSubmitPlugins) {
  auto c = Cluster();
  EXPECT_TRUE(HasLine(RenderSlurmConf(c, {}), "JobSubmitPlugins=lua"));
  std::string lua = JobSubmitLuaScript();
  EXPECT_NE(lua.find(std::string(kStateSaveDir) + "/" + kSubmitMarkerFile), std::string::npos) << lua;
  EXPECT_NE(lua.find("function slurm_job_submit"), std::string::npos);
  EXPECT_NE(lua.find("return slurm.SUCCESS"), std::string::npos);
  c.spec.extra_config = {"JobSubmitPlugins=require_timelimit"};
  auto conf = RenderSlurmConf(c, {});
  EXPECT_FALSE(HasLine(conf, "JobSubmitPlugins=lua"));
  EXPECT_TRUE(HasLine(conf, "JobSubmitPlugins=require_timelimit"));
}

TEST(SlurmConfTest, DynamicNodeConfCarriesShapeAndFeatures) {
  auto ns = NodeSet("gpu", 1);
  ns.spec.features = {"a100"};
  EXPECT_EQ(DynamicNodeConf(ns),
            "CPUs=4 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=8000 Feature=gpu,a100 "
            "Gres=gpu:1");
}

// Guards the parsing of slurmrestd v0.0.38 node answers (shape captured from Slurm 22.05.8).
// Workers run the health check every interval and after each job, unless checks are off or the
// admin's extraConfig sets its own program (theirs wins; keys are case-insensitive).
TEST(SlurmConfTest, HealthCheckProgramRunsEveryIntervalAndAfterEachJob) {
  auto c = Cluster();
  c.spec.health_checks.interval_seconds = 7;
  std::string conf = RenderSlurmConf(c, {NodeSet("cpu")});
  EXPECT_TRUE(HasLine(conf, "HealthCheckProgram=/run/slurm-scripts/health_check")) << conf;
  EXPECT_TRUE(HasLine(conf, "HealthCheckInterval=7"));
  EXPECT_TRUE(HasLine(conf, "HealthCheckNodeState=ANY"));
  EXPECT_TRUE(HasLine(conf, "Epilog=/run/slurm-scripts/health_check"));

  c.spec.extra_config = {"healthcheckprogram=/usr/sbin/nhc", "HealthCheckInterval=300", "Epilog=/opt/epilog"};
  conf = RenderSlurmConf(c, {NodeSet("cpu")});
  EXPECT_FALSE(HasLine(conf, "HealthCheckProgram=/run/slurm-scripts/health_check"));
  EXPECT_FALSE(HasLine(conf, "Epilog=/run/slurm-scripts/health_check"));
  EXPECT_TRUE(HasLine(conf, "healthcheckprogram=/usr/sbin/nhc"));

  c.spec.extra_config.clear();
  c.spec.health_checks.enabled = false;
  conf = RenderSlurmConf(c, {NodeSet("cpu")});
  EXPECT_EQ(conf.find("HealthCheck"), std::string::npos);
  // Without checks the Epilog does nothing; it is there so that a job's end places the next one at
  // once (slurmctld schedules on a node's epilog report; without one, at its next periodic pass).
  EXPECT_TRUE(HasLine(conf, "Epilog=/bin/true")) << conf;
  c.spec.extra_config = {"epilog=/opt/epilog"};
  conf = RenderSlurmConf(c, {NodeSet("cpu")});
  EXPECT_EQ(conf.find("Epilog=/bin/true"), std::string::npos);
}

TEST(RestClientTest, ParsesNodes) {
  const char* body = R"({"meta":{},"errors":[],"nodes":[
    {"name":"cpu-0","state":"idle","state_flags":["DRAIN","DYNAMIC_NORM"],"reason":"hpcplane: x",
     "reason_changed_at":1700000000,"extra":"hpcplane-health:1700000005:ok",
     "features":"cpu,fast","cpus":2,"alloc_cpus":0},
    {"name":"cpu-1","state":"allocated","state_flags":["DYNAMIC_NORM"],"reason":"","features":"cpu","cpus":2,
     "alloc_cpus":2}]})";
  auto nodes = RestClient::ParseNodes(body);
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_TRUE((*nodes)[0].Drain());
  EXPECT_FALSE((*nodes)[0].Busy());
  EXPECT_EQ((*nodes)[0].features.count("fast"), 1u);
  EXPECT_EQ((*nodes)[0].reason_changed_at, 1700000000);
  EXPECT_EQ((*nodes)[0].extra, "hpcplane-health:1700000005:ok");
  EXPECT_TRUE((*nodes)[1].Busy());
  EXPECT_EQ((*nodes)[1].extra, "");
}

// The job list as slurmrestd v0.0.38 /jobs and 22.05's `squeue --json` print it: the fields
// the operator reads survive the parse-time filter, nested values of dropped fields do not
// confuse it, and an error in the body is still reported.
TEST(RestClientTest, ParsesJobsKeepingOnlyWhatTheOperatorReads) {
  const char* body = R"({"meta":{"plugin":{"type":"openapi/v0.0.38"}},"errors":[],"jobs":[
    {"account":"default","job_id":7,"user_name":"alice","job_state":"PENDING","state_reason":"Resources",
     "partition":"cpu","nodes":"","submit_time":100,"start_time":0,"node_count":2,"cpus":4,
     "minimum_cpus_per_node":2,"memory_per_node":500,"memory_per_cpu":null,"tres_per_node":"gres:gpu:1",
     "shared":"none","array_task_string":"1-9%2","array_max_tasks":2,"restart_cnt":1,
     "flags":["JOB_WAS_RUNNING"],"job_resources":{"nodes":"cpu-0","allocated_hosts":1,"allocated_nodes":[{"job_id":99}]},
     "gres_detail":[],"name":"job_id"}]})";
  auto jobs = RestClient::ParseJobs(body);
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 1u);
  const auto& j = (*jobs)[0];
  EXPECT_EQ(j.job_id, 7);
  EXPECT_EQ(j.user, "alice");
  EXPECT_EQ(j.state, "PENDING");
  EXPECT_EQ(j.reason, "Resources");
  EXPECT_EQ(j.partition, "cpu");
  EXPECT_EQ(j.submit_time, 100);
  EXPECT_EQ(j.node_count, 2);
  EXPECT_EQ(j.cpus, 4);
  EXPECT_EQ(j.min_cpus_per_node, 2);
  EXPECT_EQ(j.memory_per_node, 500);
  EXPECT_EQ(j.memory_per_cpu, 0);
  EXPECT_EQ(j.gpus_per_node, 1);
  EXPECT_TRUE(j.exclusive);
  EXPECT_EQ(j.array_task_string, "1-9%2");
  EXPECT_EQ(j.array_max_tasks, 2);
  EXPECT_EQ(j.restart_count, 1);
  EXPECT_FALSE(j.configuring);
  // 24.11 on: a job allocated powered-down nodes is RUNNING with the CONFIGURING flag until they boot.
  auto booting = RestClient::ParseJobs(R"({"jobs":[{"job_id":8,"job_state":["RUNNING","CONFIGURING"]}]})");
  ASSERT_TRUE(booting.ok()) << booting.status().message();
  EXPECT_EQ((*booting)[0].state, "RUNNING");
  EXPECT_TRUE((*booting)[0].configuring);
  auto failed = RestClient::ParseJobs(R"({"errors":[{"error":"Unable to query jobs","error_number":1}],"jobs":[]})");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "slurmrestd: Unable to query jobs");
}

TEST(RestClientTest, ReportsErrorsInBody) {
  auto nodes = RestClient::ParseNodes(R"({"errors":[{"error":"Unable to query nodes"}],"nodes":[]})");
  ASSERT_FALSE(nodes.ok());
  EXPECT_EQ(nodes.status().message(), "slurmrestd: Unable to query nodes");
  EXPECT_FALSE(RestClient::ParseNodes("<html>").ok());
}

// Confined jobs: cgroup plugins in slurm.conf and a cgroup.conf that constrains memory (devices
// only where there are GPUs), and no core binding: a job runs on its worker pod's CPUs, not on
// the machine's first ones; unconfined clusters keep process tracking only.
TEST(SlurmConfTest, ConfinedJobsUseCgroupPluginsAndConstrainMemoryNotCores) {
  const std::string off = RenderSlurmConf(Cluster(), {NodeSet("cpu")});
  EXPECT_TRUE(HasLine(off, "ProctrackType=proctrack/linuxproc")) << off;
  EXPECT_TRUE(HasLine(off, "TaskPlugin=task/none")) << off;
  EXPECT_EQ(RenderCgroupConf(JobCgroups::kNone, false), "");
  const std::string on = RenderSlurmConf(Cluster(), {NodeSet("cpu")}, JobCgroups::kV1);
  EXPECT_TRUE(HasLine(on, "ProctrackType=proctrack/cgroup")) << on;
  EXPECT_TRUE(HasLine(on, "TaskPlugin=task/cgroup")) << on;
  const std::string v1 = RenderCgroupConf(JobCgroups::kV1, false);
  for (const char* line :
       {"CgroupPlugin=cgroup/v1", "CgroupMountpoint=/sys/fs/cgroup", "ConstrainCores=no", "ConstrainRAMSpace=yes"}) {
    EXPECT_TRUE(HasLine(v1, line)) << line << "\n" << v1;
  }
  EXPECT_FALSE(HasLine(v1, "ConstrainDevices=yes")) << v1;
  EXPECT_TRUE(HasLine(RenderCgroupConf(JobCgroups::kV1, true), "ConstrainDevices=yes"));
  const std::string v2 = RenderCgroupConf(JobCgroups::kV2, false);
  EXPECT_TRUE(HasLine(v2, "CgroupPlugin=cgroup/v2")) << v2;
  EXPECT_TRUE(HasLine(v2, "IgnoreSystemd=yes")) << v2;
}

// Where nodesets have GPUs, slurmd finds its worker's own (AutoDetect=nvidia, 24.11 on: the
// gpu/nvidia plugin reads the driver's list, which shows a pod only its GPUs); before, and
// without GPUs, there is no gres.conf.
TEST(SlurmConfTest, GresConfDetectsTheWorkersGpusFrom2411On) {
  EXPECT_TRUE(HasLine(RenderGresConf(true, Release{26, 5, 5}), "AutoDetect=nvidia"));
  EXPECT_TRUE(HasLine(RenderGresConf(true, Release{24, 11, 5}), "AutoDetect=nvidia"));
  EXPECT_EQ(RenderGresConf(true, Release{22, 5, 8}), "");
  EXPECT_EQ(RenderGresConf(false, Release{26, 5, 5}), "");
  EXPECT_TRUE(
      HasLine(RenderSlurmConf(Cluster(), {NodeSet("gpu", 1)}, JobCgroups::kNone, Release{26, 5, 5}), "GresTypes=gpu"));
}

}  // namespace
}  // namespace hpc::slurm
