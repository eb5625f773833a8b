// Jobs are confined (real Slurm on a cgroup v1 host): each job runs in a cgroup below its worker
// pod's own, on its worker's own host CPUs and with the memory it asked for and no more; what it
// leaves running dies with it; users see only their own processes; and no process of a tenant,
// in the login pod or in a job, creates a user namespace.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "common/files.h"
#include "harness.h"
#include "runtime/local/cpu_sets.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

// One worker of two CPUs, alice and bob on it.
ClusterOptions TwoCpuWorker() {
  ClusterOptions o;
  o.replicas = 1;
  o.max_replicas = 1;
  o.cpus = 2;
  return o;
}

std::string Srun(TestCluster& c, const std::string& user, const std::vector<std::string>& opts,
                 const std::string& script) {
  std::vector<std::string> cmd = {"srun"};
  cmd.insert(cmd.end(), opts.begin(), opts.end());
  cmd.insert(cmd.end(), {"bash", "-c", script});
  auto r = c.Login(user, cmd, 90s);
  return Trim(r.out) + (r.exit_code != 0 ? " (exit " + std::to_string(r.exit_code) + ": " + Trim(r.err) + ")" : "");
}

std::string SacctState(TestCluster& c, int64_t id) {
  auto r = c.Login("alice", {"sacct", "-X", "-n", "-P", "-o", "State", "-j", std::to_string(id)});
  return Trim(r.out);
}

// The CPUs pods are pinned among: the cgroup root's cpuset (what the runtime reads), not this
// process's affinity.
int HostCpus() {
  auto text = files::Read("/sys/fs/cgroup/cpuset/cpuset.cpus");
  auto cpus = runtime::local::ParseCpuList(text.ok() ? *text : "");
  return cpus.ok() && !cpus->empty() ? static_cast<int>(cpus->size()) : 1;
}

TEST(ConfinementIT, JobsRunOnTheirWorkersCpusWithTheMemoryTheyAskedForAndNothingOutlivesThem) {
  if (!HostHasCgroupV1()) GTEST_SKIP() << "jobs are confined on cgroup v1 hosts (Slurm 22.05)";
  TestCluster c("confine", TwoCpuWorker());
  ASSERT_EQ(c.Up().exit_code, 0);
  // A job runs on its worker pod's CPUs (two, or the host's where it has fewer), whatever it
  // asked for: slurmd binds no job to cores (it would take the machine's first ones).
  const std::string worker_cpus = std::to_string(std::min(2, HostCpus()));
  EXPECT_EQ(Srun(c, "alice", {"-c1"}, "nproc"), worker_cpus);
  EXPECT_EQ(Srun(c, "alice", {"-c2"}, "python3 -c 'import os; print(len(os.sched_getaffinity(0)))'"), worker_cpus);
  // The job's cgroup holds the memory it asked for; allocating past it is the OOM handler's.
  EXPECT_EQ(Srun(c, "alice", {"--mem=100M"},
                 "cat /sys/fs/cgroup/memory/slurm_*/uid_2001/job_$SLURM_JOB_ID/memory.limit_in_bytes"),
            std::to_string(100 << 20));
  auto hog = c.Login("alice", {"sbatch", "--mem=100M", "-o", "/dev/null", "--wrap",
                               "python3 -c 'x = bytearray(400 << 20); x[::4096] = b\"x\" * len(x[::4096])'"});
  int64_t hog_id = JobIdFrom(hog.out);
  ASSERT_GT(hog_id, 0) << hog.err;
  EXPECT_TRUE(WaitFor([&] { return SacctState(c, hog_id) == "OUT_OF_MEMORY"; }, 60s)) << SacctState(c, hog_id);

  // A child that leaves its job's session is ended with the job.
  auto stray = c.Login("alice", {"sbatch", "-o", "/dev/null", "--wrap", "setsid sleep 4242 & disown; sleep 1"});
  int64_t stray_id = JobIdFrom(stray.out);
  ASSERT_GT(stray_id, 0) << stray.err;
  EXPECT_TRUE(WaitFor([&] { return SacctState(c, stray_id) == "COMPLETED"; }, 60s)) << SacctState(c, stray_id);
  auto left = [&] { return c.Cli({"exec", "cpu-0", "--", "pgrep", "-f", "sleep 4242"}); };
  EXPECT_TRUE(WaitFor([&] { return left().exit_code == 1; }, 15s)) << left().out;
}

// Each worker pod has host CPUs of its own, and its jobs run there: two 1-CPU workers of a
// cluster on a host with two CPUs or more run their tasks on two different CPUs, one each
// (slurmd used to bind every job of every worker to host CPU 0).
TEST(ConfinementIT, EachWorkersJobsRunOnHostCpusOfItsOwn) {
  if (!HostHasCgroupV1()) GTEST_SKIP() << "jobs are confined on cgroup v1 hosts (Slurm 22.05)";
  if (HostCpus() < 2) GTEST_SKIP() << "one CPU: every worker shares it";
  ClusterOptions o;
  o.replicas = 2;
  o.max_replicas = 2;
  o.cpus = 1;
  TestCluster c("owncpus", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string seen = Srun(c, "alice", {"-N2", "--ntasks-per-node=1", "--mem=100M"},
                                "echo $(hostname) $(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status)");
  std::map<std::string, std::string> cpus_of_host;
  std::istringstream lines(seen);
  for (std::string host, cpus; lines >> host >> cpus;) cpus_of_host[host] = cpus;
  ASSERT_EQ(cpus_of_host.size(), 2u) << seen;
  std::set<std::string> distinct;
  for (const auto& [host, cpus] : cpus_of_host) {
    EXPECT_EQ(cpus.find_first_of(",-"), std::string::npos) << host << " runs on more than one CPU: " << cpus;
    distinct.insert(cpus);
  }
  EXPECT_EQ(distinct.size(), 2u) << seen;
}

TEST(ConfinementIT, UsersSeeOnlyTheirOwnProcessesAndCreateNoUserNamespaces) {
  if (!HostHasCgroupV1()) GTEST_SKIP() << "jobs are confined on cgroup v1 hosts (Slurm 22.05)";
  TestCluster c("userns", TwoCpuWorker());
  ASSERT_EQ(c.Up().exit_code, 0);
  // bob's job holds a CPU of the worker while alice's looks at the worker's processes.
  // (Without --mem a job holds all of the worker's memory, and the next would wait.)
  auto held = c.Login("bob", {"sbatch", "-c1", "--mem=100M", "-o", "/dev/null", "--wrap", "exec sleep 4343"});
  int64_t held_id = JobIdFrom(held.out);
  ASSERT_GT(held_id, 0) << held.err;
  ASSERT_TRUE(WaitFor([&] { return c.JobField(held_id, "JobState") == "RUNNING"; }, 60s));
  ASSERT_TRUE(WaitFor([&] { return c.Cli({"exec", "cpu-0", "--", "pgrep", "-f", "sleep 4343"}).exit_code == 0; }, 20s));
  const std::string seen = Srun(c, "alice", {"-c1", "--mem=100M"}, "ps -eo user:16,args; echo END");
  EXPECT_EQ(seen.find("sleep 4343"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("bob"), std::string::npos) << seen;
  EXPECT_NE(seen.find("alice"), std::string::npos) << seen;
  EXPECT_NE(seen.find("END"), std::string::npos) << seen;
  // Neither in the login pod nor in a job: no user namespace, mapped to root or not.
  for (const std::string probe : {"unshare -Ur true", "unshare -U true"}) {
    auto login = c.Login("alice", {"bash", "-c", probe + " 2>/dev/null; echo $?"});
    EXPECT_EQ(Trim(login.out), "1") << probe << ": " << login.err;
    EXPECT_EQ(Srun(c, "alice", {"-c1", "--mem=100M"}, probe + " 2>/dev/null; echo $?"), "1") << probe;
  }
  c.Login("bob", {"scancel", std::to_string(held_id)});
}

}  // namespace
}  // namespace hpc::it
