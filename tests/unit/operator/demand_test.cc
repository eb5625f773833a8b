#include "operator/demand.h"

#include <gtest/gtest.h>

namespace hpc::op {
namespace {

slurm::SlurmJob Pending(int64_t id, const std::string& reason, int nodes = 1, int cpus = 1) {
  slurm::SlurmJob j;
  j.job_id = id;
  j.state = "PENDING";
  j.reason = reason;
  j.partition = "cpu";
  j.node_count = nodes;
  j.cpus = cpus;
  j.min_cpus_per_node = std::max(1, cpus / nodes);
  return j;
}

const NodeShape kShape{4, 8000, 0};

// Each pending reason either is demand (capacity) or is not.
TEST(DemandTest, CapacityReasonsCountOthersDoNot) {
  for (const char* r :
       {"None", "Resources", "Priority", "PartitionConfig", "PartitionNodeLimit", "ReqNodeNotAvail", "NodeDown"}) {
    EXPECT_TRUE(IsCapacityReason(r)) << r;
    auto d = ComputeDemand({Pending(1, r)}, "cpu", kShape, 8, 8);
    EXPECT_EQ(d.nodes_needed, 1) << r;
  }
  for (const char* r :
       {"JobHeldUser", "JobHeldAdmin", "Dependency", "DependencyNeverSatisfied", "BeginTime", "Reservation", "Licenses",
        "QOSMaxJobsPerUserLimit", "AssocGrpCpuLimit", "AssocMaxJobsLimit", "PartitionDown", "InvalidAccount"}) {
    EXPECT_FALSE(IsCapacityReason(r)) << r;
    auto d = ComputeDemand({Pending(1, r)}, "cpu", kShape, 8, 8);
    EXPECT_EQ(d.nodes_needed, 0) << r;
    EXPECT_EQ(d.jobs_ignored, 1) << r;
  }
}

// Slurm shows a job waiting on a dependency in a partition without nodes as PartitionConfig, a
// capacity reason; the dependency (or a hold) decides, not the reason.
TEST(DemandTest, DependenciesAndHoldsAreNotDemandWhateverTheReason) {
  auto dep = Pending(1, "PartitionConfig");
  dep.dependency = "afterok:12(unfulfilled)";
  auto failed = Pending(2, "None");
  failed.dependency = "afterok:13(failed)";
  auto held = Pending(3, "None");
  held.priority = 0;
  auto d = ComputeDemand({dep, failed, held}, "cpu", kShape, 8, 8);
  EXPECT_EQ(d.nodes_needed, 0);
  EXPECT_EQ(d.jobs_ignored, 3);
  // A satisfied dependency, and a job with a priority, are demand as usual.
  dep.dependency = "";
  held.priority = 4294901759;
  EXPECT_EQ(ComputeDemand({dep, held}, "cpu", kShape, 8, 8).nodes_needed, 1);
}

// Small jobs share a node; a node's CPUs bound how many.
TEST(DemandTest, PacksSmallJobsOntoShape) {
  std::vector<slurm::SlurmJob> jobs;
  for (int i = 0; i < 9; ++i) jobs.push_back(Pending(i, "Resources", 1, 1));
  EXPECT_EQ(ComputeDemand(jobs, "cpu", kShape, 8, 8).nodes_needed, 3);  // 4 + 4 + 1
  jobs.push_back(Pending(20, "Resources", 1, 3));
  // The 3-CPU job goes first (decreasing) and shares with one 1-CPU job.
  EXPECT_EQ(ComputeDemand(jobs, "cpu", kShape, 8, 8).nodes_needed, 3);
}

// Multi-node jobs take distinct nodes; memory per node counts too.
TEST(DemandTest, MultiNodeAndMemory) {
  auto two = Pending(1, "PartitionNodeLimit", 2, 2);
  EXPECT_EQ(ComputeDemand({two}, "cpu", kShape, 8, 8).nodes_needed, 2);
  auto mem = Pending(2, "Resources");
  mem.memory_per_node = 5000;
  EXPECT_EQ(ComputeDemand({mem, mem}, "cpu", kShape, 8, 8).nodes_needed, 2);  // 5000 + 5000 > 8000
  auto per_cpu = Pending(3, "Resources", 1, 2);
  per_cpu.memory_per_cpu = 1000;  // 2000 per node
  EXPECT_EQ(ComputeDemand({per_cpu, per_cpu}, "cpu", kShape, 8, 8).nodes_needed, 1);
}

// --exclusive jobs take whole nodes, even when small.
TEST(DemandTest, ExclusiveTakesWholeNodes) {
  auto ex = Pending(1, "Resources");
  ex.exclusive = true;
  EXPECT_EQ(ComputeDemand({ex, ex, Pending(3, "Resources")}, "cpu", kShape, 8, 8).nodes_needed, 3);
}

// Arrays count their pending tasks, limited by %N.
TEST(DemandTest, ArraysCountPendingTasks) {
  EXPECT_EQ(CountArrayTasks("1-5%2"), 5);
  EXPECT_EQ(CountArrayTasks("3,7-9"), 4);
  EXPECT_EQ(CountArrayTasks("0-10:5"), 3);
  auto arr = Pending(1, "Resources", 1, 4);
  arr.array_task_string = "1-6";
  EXPECT_EQ(ComputeDemand({arr}, "cpu", kShape, 8, 8).nodes_needed, 6);
  arr.array_max_tasks = 2;
  arr.array_task_string = "1-6%2";
  auto d = ComputeDemand({arr}, "cpu", kShape, 8, 8);
  EXPECT_EQ(d.nodes_needed, 2);
  EXPECT_EQ(d.jobs_counted, 2);
}

// GPU jobs need workers with GPUs; too many per node never fits.
TEST(DemandTest, GpuJobs) {
  auto g = Pending(1, "Resources");
  g.gpus_per_node = 2;
  NodeShape gpu{8, 32000, 4};
  EXPECT_EQ(ComputeDemand({g, g, g}, "cpu", gpu, 8, 8).nodes_needed, 2);  // 2 + 2 | 2
  auto d = ComputeDemand({g}, "cpu", kShape, 8, 8);                       // no GPUs on the shape
  EXPECT_EQ(d.nodes_needed, 0);
  ASSERT_EQ(d.unfit.size(), 1u);
  EXPECT_EQ(d.unfit[0].why, "needs 2 GPUs per node, a worker has 0");
}

// A job that can never fit is reported and scales nothing.
TEST(DemandTest, NeverFittingJobsAreReported) {
  auto wide = Pending(7, "PartitionConfig", 6, 6);
  auto fat = Pending(8, "Resources", 1, 16);
  auto d = ComputeDemand({wide, fat}, "cpu", kShape, 4, 4);
  EXPECT_EQ(d.nodes_needed, 0);
  ASSERT_EQ(d.unfit.size(), 2u);
  EXPECT_EQ(d.unfit[0].why, "needs 6 nodes, the nodeset holds at most 4");
  EXPECT_EQ(d.unfit[1].why, "needs 16 CPUs per node, a worker has 4");
}

// Only the nodeset's own partition counts; jobs may name several partitions.
TEST(DemandTest, MatchesPartition) {
  auto other = Pending(1, "Resources");
  other.partition = "gpu";
  auto both = Pending(2, "Resources");
  both.partition = "gpu,cpu";
  auto running = Pending(3, "Resources");
  running.state = "RUNNING";
  EXPECT_EQ(ComputeDemand({other, both, running}, "cpu", kShape, 8, 8).nodes_needed, 1);
}

// desired = clamp(busy + needed, min, max), and packing stops at the room left.
TEST(DemandTest, DesiredIsClamped) {
  std::vector<slurm::SlurmJob> jobs(100, Pending(1, "Resources", 1, 4));
  auto d = ComputeDemand(jobs, "cpu", kShape, 8, 5);
  EXPECT_EQ(d.nodes_needed, 5);
  EXPECT_EQ(DesiredWorkers(3, d, 0, 8), 8);
  EXPECT_EQ(DesiredWorkers(0, Demand{}, 2, 8), 2);
}

}  // namespace
}  // namespace hpc::op
