// The operator's job listing, read from lines that squeue printed for this command on real
// clusters (Slurm 26.05, 24.11 and 22.05), with '|' standing for the unit separator it asks for.
#include "slurm/squeue_jobs.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "fakes/fake_pod_runtime.h"

namespace hpc::slurm {
namespace {

std::string Listing(std::string with_pipes) {
  std::replace(with_pipes.begin(), with_pipes.end(), '|', '\x1f');
  return with_pipes;
}

// Slurm 26.05.
constexpr const char* k2605 =
    "2008|alice|PENDING|Dependency|auto||1796566363|N/A|1|1|1|400M|cpu=1,mem=400M,node=1,billing=1|N/A|NO|NO|1-5%2|"
    "afterok:2006(unfulfilled)|1|0|\n"
    "2007|alice|PENDING|JobHeldUser|auto||1796566363|N/A|1|1|1|300M|cpu=1,mem=300M,node=1,billing=1|N/A|NO|NODE|N/A|"
    "(null)|0|0|\n"
    "2006|alice|PENDING|JobHeldUser|auto||1796566363|N/A|2|2|1|100M|cpu=2,mem=200M,node=1,billing=2|N/A|NO|NO|N/A|"
    "(null)|0|0|\n"
    "2005|alice|RUNNING|None|auto|auto-0|1796566362|1796566362|1|1|1|400M|cpu=1,mem=400M,node=1,billing=1|N/A|NO|NO|"
    "N/A|(null)|1|0|\n"
    "2010|alice|COMPLETED|None|auto|auto-[1-2]|1796566375|1796566375|2|2|1|400M|cpu=2,mem=800M,node=2,billing=2|N/A|"
    "NO|NO|N/A|(null)|1|0|\n";

// Slurm 22.05 and 24.11 print no Exclusive field (empty); OverSubscribe says NO for an exclusive job.
constexpr const char* k2205 =
    "3|alice|PENDING|PartitionConfig|auto||1796566381|N/A|1|1|1|400M|cpu=1,mem=400M,node=1,billing=1|N/A|OK||1-5%2|"
    "afterok:1(unfulfilled)|4294901759|0|\n"
    "2|alice|PENDING|JobHeldUser|auto||1796566381|N/A|1|1|1|300M|cpu=1,mem=300M,node=1,billing=1|N/A|NO||N/A|(null)|0|"
    "0|\n"
    "1|alice|PENDING|JobHeldUser|auto||1796566381|N/A|1|2|1|100M|cpu=2,mem=200M,node=1,billing=2|N/A|OK||N/A|(null)|0|"
    "0|\n";

TEST(SqueueListing, ReadsWhatTheAutoscalerAndTheMetricsUse) {
  auto jobs = ParseSqueueListing(Listing(k2605));
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 5u);
  const SlurmJob& array = (*jobs)[0];
  EXPECT_EQ(array.job_id, 2008);
  EXPECT_EQ(array.user, "alice");
  EXPECT_EQ(array.state, "PENDING");
  EXPECT_EQ(array.reason, "Dependency");
  EXPECT_EQ(array.partition, "auto");
  EXPECT_EQ(array.nodes, "");
  EXPECT_EQ(array.submit_time, 1796566363);
  EXPECT_EQ(array.start_time, 0);
  EXPECT_EQ(array.array_task_string, "1-5%2");
  EXPECT_EQ(array.array_max_tasks, 2);
  EXPECT_EQ(array.dependency, "afterok:2006(unfulfilled)");
  EXPECT_TRUE(array.WaitsOnDependency());
  EXPECT_EQ(array.priority, 1);
  EXPECT_FALSE(array.exclusive);

  const SlurmJob& held = (*jobs)[1];
  EXPECT_TRUE(held.Held());
  EXPECT_TRUE(held.exclusive);
  EXPECT_EQ(held.memory_per_node, 300);
  EXPECT_EQ(held.memory_per_cpu, 0);
  EXPECT_EQ(held.dependency, "");
  EXPECT_EQ(held.array_task_string, "");

  const SlurmJob& running = (*jobs)[3];
  EXPECT_EQ(running.state, "RUNNING");
  EXPECT_EQ(running.reason, "None");
  EXPECT_EQ(running.nodes, "auto-0");
  EXPECT_EQ(running.start_time, 1796566362);

  const SlurmJob& done = (*jobs)[4];
  EXPECT_TRUE(done.Finished());
  EXPECT_EQ(done.node_count, 2);
  EXPECT_EQ(done.cpus, 2);
}

// squeue prints one memory figure; the request's TRES total tells per CPU (the figure times the
// CPUs) from per node (times the nodes).
TEST(SqueueListing, TellsMemoryPerCpuFromMemoryPerNode) {
  auto jobs = ParseSqueueListing(Listing(k2605));
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  const SlurmJob& per_cpu = (*jobs)[2];  // sbatch -n2 --mem-per-cpu=100
  EXPECT_EQ(per_cpu.memory_per_cpu, 100);
  EXPECT_EQ(per_cpu.memory_per_node, 0);
  EXPECT_EQ(per_cpu.cpus, 2);
  const SlurmJob& per_node = (*jobs)[1];  // sbatch --mem=300
  EXPECT_EQ(per_node.memory_per_node, 300);
  // -N2 with the partition's default per CPU: 400 a node either way.
  const SlurmJob& two_nodes = (*jobs)[4];
  EXPECT_EQ(two_nodes.memory_per_node + two_nodes.memory_per_cpu, 400);

  auto big = ParseSqueueListing(
      Listing("7|bob|PENDING|Resources|p||1|N/A|2|8|4|2G|cpu=8,mem=16G,node=2,billing=8|gres/gpu:2|OK|NO|N/A|(null)|5|"
              "0|\n"));
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ((*big)[0].memory_per_cpu, 2048);
  EXPECT_EQ((*big)[0].min_cpus_per_node, 4);
  EXPECT_EQ((*big)[0].gpus_per_node, 2);
}

TEST(SqueueListing, OlderSlurmShowsExclusiveJobsAsOverSubscribeNo) {
  auto jobs = ParseSqueueListing(Listing(k2205));
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_FALSE((*jobs)[0].exclusive);
  EXPECT_TRUE((*jobs)[1].exclusive);
  EXPECT_FALSE((*jobs)[2].exclusive);
  EXPECT_EQ((*jobs)[0].priority, 4294901759);
  EXPECT_EQ((*jobs)[2].memory_per_cpu, 100);
}

// squeue prints a job's description in place of its reason when Slurm wrote one, and a flag in
// place of its state: the autoscaler compares the reason's name, and a job whose nodes still boot
// is RUNNING and configuring, as slurmrestd says it.
TEST(SqueueListing, ReasonsWithoutTheirDescriptionAndFlagsAsSlurmrestdSaysThem) {
  auto jobs = ParseSqueueListing(
      Listing("9|alice|PENDING|ReqNodeNotAvail, UnavailableNodes:cpu-[0-1]|cpu||1|N/A|1|1|1|400M|"
              "cpu=1,mem=400M,node=1,billing=1|N/A|NO|NO|N/A|(null)|1|0|\n"
              "10|alice|CONFIGURING|None|cpu|cpu-2|1|2|1|1|1|400M|cpu=1,mem=400M,node=1,billing=1|N/A|NO|NO|N/A|"
              "(null)|1|0|\n"
              "11|alice|COMPLETING|None|cpu|cpu-3|1|2|1|1|1|400M|cpu=1,mem=400M,node=1,billing=1|N/A|NO|NO|N/A|"
              "(null)|1|0|\n"
              "12|alice|PENDING|Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_"
              "partitions|cpu||1|N/A|1|1|1|400M|cpu=1,mem=400M,node=1,billing=1|N/A|NO|NO|N/A|(null)|1|0|\n"));
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  EXPECT_EQ((*jobs)[0].reason, "ReqNodeNotAvail");
  EXPECT_EQ((*jobs)[1].state, "RUNNING");
  EXPECT_TRUE((*jobs)[1].configuring);
  EXPECT_EQ((*jobs)[2].state, "COMPLETING");
  EXPECT_FALSE((*jobs)[2].Finished()) << "its node is still busy";
  EXPECT_EQ((*jobs)[3].reason,
            "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions");
}

// Where squeue prints Exclusive (26.05) it alone decides; OverSubscribe only where it is empty.
TEST(SqueueListing, ExclusiveDecidesWhereSqueuePrintsIt) {
  auto jobs =
      ParseSqueueListing(Listing("1|a|PENDING|None|p||1|N/A|1|1|1|1M|cpu=1,mem=1M,node=1|N/A|NO|OK|N/A|(null)|1|0|\n"
                                 "2|a|PENDING|None|p||1|N/A|1|1|1|1M|cpu=1,mem=1M,node=1|N/A|NO|USER|N/A|(null)|1|0|\n"
                                 "3|a|PENDING|None|p||1|N/A|1|1|1|1M|cpu=1,mem=1M,node=1|N/A|NO||N/A|(null)|1|0|\n"));
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  EXPECT_FALSE((*jobs)[0].exclusive) << "an unknown word is not exclusive: OverSubscribe is NO for every job there";
  EXPECT_TRUE((*jobs)[1].exclusive);
  EXPECT_TRUE((*jobs)[2].exclusive);
}

TEST(SqueueListing, EmptyQueueIsNoJobs) {
  auto jobs = ParseSqueueListing("");
  ASSERT_TRUE(jobs.ok());
  EXPECT_TRUE(jobs->empty());
}

// A listing that is not what was asked for fails whole, naming the line: the autoscaler then
// decides nothing rather than act on a queue with jobs missing.
TEST(SqueueListing, AMalformedLineFailsTheWholeListing) {
  std::string text = Listing(k2605);
  text += "squeue: error: slurm_load_jobs error: Socket timed out\n";
  auto jobs = ParseSqueueListing(text);
  ASSERT_FALSE(jobs.ok());
  EXPECT_NE(jobs.status().message().find("line 6"), std::string::npos) << jobs.status().message();

  auto bad_number = ParseSqueueListing(Listing(
      "x1|alice|PENDING|None|auto||1|N/A|1|1|1|400M|cpu=1,mem=400M,node=1,billing=1|N/A|NO|NO|N/A|(null)|1|0|\n"));
  ASSERT_FALSE(bad_number.ok());
  EXPECT_NE(bad_number.status().message().find("JobID is not a number"), std::string::npos)
      << bad_number.status().message();
  // A JSON document (what the listing was before) is not mistaken for an empty queue.
  EXPECT_FALSE(ParseSqueueListing(R"({"jobs": []})").ok());
}

// squeue prints a field it does not know empty and says so only on stderr: Exclusive before
// 26.05 is expected, any other field fails the listing (it would read as "none" for every job).
TEST(SqueueListing, AFieldSqueueDoesNotKnowFailsTheListingUnlessItIsExclusive) {
  fakes::FakePodRuntime rt;
  std::string err;
  rt.exec_handler = [&](const std::string&, const runtime::ExecOptions& o) {
    ProcessResult r;
    r.exit_code = 0;
    r.err = err;
    EXPECT_EQ(o.env.at("SLURM_TIME_FORMAT"), "%s");
    EXPECT_EQ(o.env.at("SLURM_BITSTR_LEN"), "0");
    return r;
  };
  err = "squeue: error: Invalid job format specification: Exclusive\n";
  EXPECT_TRUE(SqueueJobs(&rt, "c1-controller").ok());
  err = "squeue: error: Invalid job format specification: tres-per-node\n";
  auto failed = SqueueJobs(&rt, "c1-controller");
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), "squeue does not know the field tres-per-node");
}

TEST(SqueueListing, TheCommandAsksForEveryStateWithoutHeaderAndPrintsWholeFields) {
  auto argv = SqueueListingCommand();
  ASSERT_EQ(argv.size(), 4u);
  EXPECT_EQ(argv[0], "squeue");
  EXPECT_EQ(argv[1], "--noheader");
  EXPECT_EQ(argv[2], "--states=all");
  EXPECT_EQ(argv[3].rfind("--Format=JobID:0\x1f,UserName:0\x1f,", 0), 0u) << argv[3];
  EXPECT_EQ(std::count(argv[3].begin(), argv[3].end(), '\x1f'), 20);
}

}  // namespace
}  // namespace hpc::slurm
