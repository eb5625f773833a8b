// Integration tests of the autoscaler against real Slurm: scale from zero on queued work, back
// to zero when idle, count only jobs more nodes would help, never kill a job, fail closed.
#include <algorithm>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using std::chrono::seconds;

ClusterOptions Elastic(const std::string& idle = "5s") {
  ClusterOptions o;
  o.replicas = -1;
  o.max_replicas = 4;
  o.extra_nodeset_spec = "  idleTimeout: " + idle + "\n";
  return o;
}

int Replicas(TestCluster& c) {
  std::string r = c.NodeSetStatusField("replicas");
  return r.empty() ? -1 : std::stoi(r);
}

// Holds `pred` true for the whole window, polling; a negative check over time, not a sync.
bool HoldsFor(const std::function<bool()>& pred, std::chrono::milliseconds window) {
  auto end = std::chrono::steady_clock::now() + window;
  while (std::chrono::steady_clock::now() < end) {
    if (!pred()) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return pred();
}

// From zero workers, sbatch -N2 runs on two new workers; after idleTimeout with nothing queued
// the nodeset returns to zero and Slurm lists no leftover node.
TEST(AutoscaleIT, ScalesFromZeroAndBackToZero) {
  TestCluster c("az", Elastic());
  ASSERT_EQ(c.Up().exit_code, 0);
  EXPECT_EQ(Replicas(c), 0);
  EXPECT_TRUE(c.SinfoNodes().empty());
  auto r =
      c.Login("alice", {"sbatch", "-N2", "--wait", "--chdir", "/shared", "-o", "az-%j.out", "--wrap", "srun hostname"},
              seconds(90));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  int64_t id = JobIdFrom(r.out);
  EXPECT_EQ(c.JobField(id, "JobState"), "COMPLETED");
  EXPECT_EQ(c.JobField(id, "NodeList"), "cpu-[0-1]");
  ASSERT_TRUE(WaitFor([&] { return Replicas(c) == 0 && c.SinfoNodes().empty(); }, seconds(60)))
      << "replicas " << Replicas(c);
  auto desc = c.Cli({"describe", "nodeset", "cpu"});
  EXPECT_NE(desc.out.find("scale up 0→2"), std::string::npos) << desc.out;
  EXPECT_NE(desc.out.find("idle past idleTimeout"), std::string::npos) << desc.out;
}

// Held jobs and jobs waiting on a dependency scale nothing; a job larger than the nodeset can
// ever hold is reported (condition + event) and scales nothing.
TEST(AutoscaleIT, OnlyCapacityDemandScales) {
  TestCluster c("ad", Elastic());
  ASSERT_EQ(c.Up().exit_code, 0);
  int64_t held = JobIdFrom(c.Login("alice", {"sbatch", "-H", "--chdir", "/shared", "--wrap", "true"}).out);
  ASSERT_GT(held, 0);
  int64_t dep = JobIdFrom(c.Login("alice", {"sbatch", "--dependency=afterok:" + std::to_string(held), "--chdir",
                                            "/shared", "--wrap", "true"})
                              .out);
  ASSERT_GT(dep, 0);
  int64_t wide = JobIdFrom(c.Login("alice", {"sbatch", "-N6", "--chdir", "/shared", "--wrap", "true"}).out);
  ASSERT_GT(wide, 0);
  std::string expect = "job " + std::to_string(wide) + " needs 6 nodes, the nodeset holds at most 4";
  ASSERT_TRUE(WaitFor(
      [&] {
        auto conds = c.NodeSetStatusField("conditions");
        return conds.find(expect) != std::string::npos;
      },
      seconds(30)))
      << c.NodeSetStatusField("conditions");
  EXPECT_TRUE(HoldsFor([&] { return Replicas(c) == 0; }, seconds(3)));
  EXPECT_EQ(c.NodeSetStatusField("desired"), "0");
  auto desc = c.Cli({"describe", "nodeset", "cpu"});
  EXPECT_NE(desc.out.find("Unschedulable  " + expect), std::string::npos) << desc.out;
  // Releasing the hold turns the held job into demand: workers come.
  c.Login("alice", {"scontrol", "release", std::to_string(held)});
  ASSERT_TRUE(WaitFor([&] { return c.JobField(held, "JobState") == "COMPLETED"; }, seconds(60)));
  c.Login("alice", {"scancel", std::to_string(wide), std::to_string(dep)});
}

// A long job keeps its worker while idle siblings go; across many short and long jobs scaled
// up and down meanwhile, no job is killed or requeued.
TEST(AutoscaleIT, ScaleDownNeverKillsJobs) {
  TestCluster c("ak", Elastic("3s"));
  ASSERT_EQ(c.Up().exit_code, 0);
  int64_t longjob = JobIdFrom(c.Login("alice", {"sbatch", "--chdir", "/shared", "--wrap", "sleep 25"}).out);
  std::vector<int64_t> jobs = {longjob};
  for (int i = 0; i < 2; ++i) {
    jobs.push_back(JobIdFrom(c.Login("alice", {"sbatch", "--chdir", "/shared", "--wrap", "sleep 1"}).out));
  }
  ASSERT_TRUE(WaitFor([&] { return c.JobField(longjob, "JobState") == "RUNNING"; }, seconds(30)));
  std::string long_node = c.JobField(longjob, "NodeList");
  // The short jobs end, their workers idle out, the long job's worker stays.
  ASSERT_TRUE(WaitFor([&] { return Replicas(c) == 1; }, seconds(40))) << Replicas(c);
  EXPECT_EQ(c.JobField(longjob, "JobState"), "RUNNING");
  auto nodes = c.SinfoNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].substr(0, nodes[0].find(' ')), long_node);

  // Waves of short and longer jobs while workers come and go.
  for (int wave = 0; wave < 3; ++wave) {
    for (int i = 0; i < 4; ++i) {
      std::string sleep = (i % 2 == 0) ? "sleep 1" : "sleep 5";
      jobs.push_back(JobIdFrom(c.Login("alice", {"sbatch", "--chdir", "/shared", "--wrap", sleep}).out));
    }
    ASSERT_TRUE(WaitFor([&] { return c.Login("root", {"squeue", "-h", "-t", "PD"}).out.empty(); }, seconds(60)));
  }
  for (int64_t id : jobs) {
    ASSERT_GT(id, 0);
    ASSERT_TRUE(WaitFor([&] { return c.JobField(id, "JobState") == "COMPLETED"; }, seconds(60)))
        << "job " << id << " " << c.JobField(id, "JobState");
    EXPECT_EQ(c.JobField(id, "ExitCode"), "0:0") << id;
    EXPECT_EQ(c.JobField(id, "Restarts"), "0") << id;
  }
  ASSERT_TRUE(WaitFor([&] { return Replicas(c) == 0 && c.SinfoNodes().empty(); }, seconds(60)));
}

// Jobs that ask for no memory share a worker as their CPUs allow: two 1-CPU jobs without --mem
// run side by side on one 2-CPU worker (each gets DefMemPerCPU, its CPU's share of the worker's
// memory, not all of it), and the autoscaler counts them the same way: one worker, not two.
TEST(AutoscaleIT, JobsWithoutMemoryShareAWorker) {
  ClusterOptions o = Elastic();
  o.cpus = 2;
  TestCluster c("am", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  // Each job runs until the test releases it, so both must be RUNNING at once to be seen so.
  const std::string script = "while [ ! -e /shared/am-release ]; do sleep 0.2; done";
  std::vector<int64_t> jobs;
  for (int i = 0; i < 2; ++i) {
    jobs.push_back(
        JobIdFrom(c.Login("alice", {"sbatch", "-c1", "--chdir", "/shared", "-o", "/dev/null", "--wrap", script}).out));
    ASSERT_GT(jobs.back(), 0);
  }
  ASSERT_TRUE(WaitFor(
      [&] { return c.JobField(jobs[0], "JobState") == "RUNNING" && c.JobField(jobs[1], "JobState") == "RUNNING"; },
      seconds(60)))
      << c.JobField(jobs[0], "JobState") << " " << c.JobField(jobs[1], "JobState") << " "
      << c.JobField(jobs[1], "Reason");
  EXPECT_EQ(c.JobField(jobs[0], "NodeList"), c.JobField(jobs[1], "NodeList"));
  EXPECT_EQ(c.JobField(jobs[0], "MinMemoryCPU"), "250M");  // 500 MiB over 2 CPUs
  EXPECT_EQ(Replicas(c), 1);
  EXPECT_EQ(c.SinfoNodes().size(), 1u);
  auto desc = c.Cli({"describe", "nodeset", "cpu"});
  EXPECT_EQ(desc.out.find("→2"), std::string::npos) << desc.out;
  ASSERT_TRUE(files::WriteInPlace(c.SharedVolume() + "/am-release", "").ok());
  for (int64_t id : jobs) {
    ASSERT_TRUE(WaitFor([&] { return c.JobField(id, "JobState") == "COMPLETED"; }, seconds(30)))
        << id << " " << c.JobField(id, "JobState");
  }
}

// An --exclusive job takes a whole worker: two 1-CPU exclusive tasks (one array, so the
// autoscaler sees both at once) get two 2-CPU workers in one step (0→2), where two shared ones
// fit on one. Slurm 26.05's JSON listing no longer said which jobs are exclusive; the listing
// reads its Exclusive field.
TEST(AutoscaleIT, ExclusiveJobsTakeAWorkerEach) {
  ClusterOptions o = Elastic();
  o.cpus = 2;
  TestCluster c("ax", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string script = "while [ ! -e /shared/ax-release ]; do sleep 0.2; done";
  auto submitted = c.Login("alice", {"sbatch", "--array=0-1", "--exclusive", "-c1", "--chdir", "/shared", "-o",
                                     "/dev/null", "--wrap", script});
  const int64_t array = JobIdFrom(submitted.out);
  ASSERT_GT(array, 0) << submitted.out << submitted.err;
  auto running = [&] {
    return c.Login("root", {"squeue", "-h", "-r", "-j", std::to_string(array), "-t", "RUNNING", "-o", "%N"}).out;
  };
  std::string nodes;  // one line a running task: its node
  ASSERT_TRUE(WaitFor(
      [&] {
        nodes = running();
        return std::count(nodes.begin(), nodes.end(), '\n') == 2;
      },
      seconds(60)))
      << c.Login("root", {"squeue", "-r"}).out;
  // Two different nodes.
  const std::string first = nodes.substr(0, nodes.find('\n'));
  EXPECT_EQ(nodes.find(first, first.size()), std::string::npos) << nodes;
  auto desc = c.Cli({"describe", "nodeset", "cpu"});
  EXPECT_NE(desc.out.find("scale up 0→2"), std::string::npos) << desc.out;
  EXPECT_EQ(desc.out.find("scale up 0→1"), std::string::npos) << desc.out;
  ASSERT_TRUE(files::WriteInPlace(c.SharedVolume() + "/ax-release", "").ok());
  ASSERT_TRUE(WaitFor(
      [&] {
        return c.Login("root", {"squeue", "-h", "-j", std::to_string(array)}).out.empty();
      },
      seconds(30)));
}

// With slurmrestd not answering, no worker is deleted even past idleTimeout; when it answers
// again, scaling resumes by itself.
TEST(AutoscaleIT, FailsClosedWhenSlurmIsUnreachable) {
  TestCluster c("af", Elastic("6s"));
  ASSERT_EQ(c.Up().exit_code, 0);
  int64_t id = JobIdFrom(c.Login("alice", {"sbatch", "-N2", "--chdir", "/shared", "--wrap", "sleep 1"}).out);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(WaitFor([&] { return c.JobField(id, "JobState") == "RUNNING"; }, seconds(30)));
  ASSERT_EQ(Replicas(c), 2);
  // Freeze slurmrestd: requests now time out, as with a hung or overloaded API server.
  auto stop = c.Cli({"exec", c.name() + "-restapi", "--", "pkill", "-STOP", "-x", "slurmrestd"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  ASSERT_TRUE(WaitFor([&] { return c.NodeSetStatusField("conditions").find("SlurmUnreachable") != std::string::npos; },
                      seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return c.JobField(id, "JobState") == "COMPLETED"; }, seconds(30)));
  auto daemon_log = [&] { return files::Read(c.ClusterDir() + "/daemon.log").value_or(""); };
  EXPECT_TRUE(HoldsFor([&] { return Replicas(c) == 2; }, seconds(12)))  // well past idleTimeout
      << "replicas " << Replicas(c) << "\n"
      << daemon_log();
  auto nodes = c.SinfoNodes();
  EXPECT_EQ(nodes.size(), 2u) << ::testing::PrintToString(nodes);
  auto cont = c.Cli({"exec", c.name() + "-restapi", "--", "pkill", "-CONT", "-x", "slurmrestd"});
  ASSERT_EQ(cont.exit_code, 0) << cont.err;
  ASSERT_TRUE(WaitFor([&] { return Replicas(c) == 0 && c.SinfoNodes().empty(); }, seconds(60)));
}

}  // namespace
}  // namespace hpc::it

namespace hpc::it {
namespace {

// Resident memory (KiB) of the slurmrestd process in the cluster's restapi pod.
int64_t SlurmrestdRssKiB(TestCluster& c) {
  auto state = files::Read(c.ClusterDir() + "/runtime/pods/" + c.name() + "-restapi/state.json");
  if (!state.ok()) return -1;
  int init = nlohmann::json::parse(*state, nullptr, false).value("pid", 0);
  auto children = files::Read("/proc/" + std::to_string(init) + "/task/" + std::to_string(init) + "/children");
  if (!children.ok() || children->empty()) return -1;
  auto status = files::Read("/proc/" + std::to_string(std::atoi(children->c_str())) + "/status");
  if (!status.ok()) return -1;
  auto pos = status->find("VmRSS:");
  return pos == std::string::npos ? -1 : std::atoll(status->c_str() + pos + 6);
}

// The autoscaler reads the queue on every pass (4 a second here) with squeue in the controller,
// not through slurmrestd, whose 22.05 release keeps the memory of every job listing it serves:
// 500 queued jobs leave it flat.
TEST(AutoscaleIT, ReadingALargeQueueLeavesSlurmrestdFlat) {
  TestCluster c("arq", Elastic());
  ASSERT_EQ(c.Up().exit_code, 0);
  auto r = c.Login(
      "alice",
      {"bash", "-c", "for i in $(seq 500); do sbatch --hold -o /dev/null --wrap true >/dev/null || exit 1; done"},
      seconds(180));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t before = SlurmrestdRssKiB(c);
  ASSERT_GT(before, 0);
  // About 40 passes, each listing the 500 jobs.
  EXPECT_TRUE(HoldsFor([&] { return Replicas(c) == 0; }, std::chrono::seconds(10)));  // held jobs scale nothing
  int64_t after = SlurmrestdRssKiB(c);
  EXPECT_LT(after - before, 16 * 1024) << "slurmrestd grew from " << before << " to " << after << " KiB";
}

// An idle cluster lists nothing but still misses no work: with its periodic safety pass set
// far out (10 min), the daemon learns of each submission from slurmctld's submit hook alone
// (inotify on the marker file). A single job after a long idle, a burst, and a single job again
// after the cluster went idle once more: every job runs.
TEST(AutoscaleIT, JobsAfterAnIdleGetWorkersSinglyAndInBursts) {
  ::setenv("HPCPLANE_IDLE_PASS_SECONDS", "600", 1);
  TestCluster c("ai", Elastic("2s"));
  auto up = c.Up();
  ::unsetenv("HPCPLANE_IDLE_PASS_SECONDS");
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto log = [&] { return files::Read(c.ClusterDir() + "/daemon.log").value_or(""); };
  auto idles = [&] {
    const std::string text = log();
    int n = 0;
    for (size_t at = text.find("is idle"); at != std::string::npos; at = text.find("is idle", at + 1)) ++n;
    return n;
  };
  auto finished = [&](int64_t id) {
    const std::string st = c.JobField(id, "JobState");
    return st == "RUNNING" || st == "COMPLETED";
  };
  ASSERT_TRUE(WaitFor([&] { return idles() >= 1; }, seconds(30))) << log();
  // Idle for a while: nothing is listed or scaled.
  EXPECT_TRUE(HoldsFor([&] { return Replicas(c) == 0; }, seconds(10)));
  auto submitted = std::chrono::steady_clock::now();
  auto r = c.Login("alice", {"sbatch", "-o", "/dev/null", "--wrap", "sleep 1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t id = JobIdFrom(r.out);
  ASSERT_TRUE(WaitFor([&] { return finished(id); }, seconds(20)))
      << "job " << id << " is " << c.JobField(id, "JobState") << " after an idle; daemon log:\n"
      << log();
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - submitted);
  EXPECT_LT(waited.count(), 20000);
  EXPECT_NE(log().find("woken by a change"), std::string::npos);

  // Back to zero and idle, then a burst of eight submissions as fast as sbatch returns.
  const int idle_before = idles();
  ASSERT_TRUE(WaitFor([&] { return Replicas(c) == 0 && idles() > idle_before; }, seconds(60))) << log();
  auto burst = c.Login(
      "alice",
      {"bash", "-c", "for i in 1 2 3 4 5 6 7 8; do sbatch --parsable -o /dev/null --wrap 'sleep 1' || exit 1; done"});
  ASSERT_EQ(burst.exit_code, 0) << burst.err;
  std::vector<int64_t> ids;
  std::istringstream lines(burst.out);
  for (std::string line; std::getline(lines, line);) ids.push_back(std::stoll(line));
  ASSERT_EQ(ids.size(), 8u) << burst.out;
  for (int64_t job : ids) {
    EXPECT_TRUE(WaitFor([&] { return c.JobField(job, "JobState") == "COMPLETED"; }, seconds(90)))
        << "job " << job << " is " << c.JobField(job, "JobState") << "; daemon log:\n"
        << log();
  }

  // Idle again: one more single job.
  const int idle_after_burst = idles();
  ASSERT_TRUE(WaitFor([&] { return Replicas(c) == 0 && idles() > idle_after_burst; }, seconds(60))) << log();
  auto last = c.Login("alice", {"sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 1"});
  ASSERT_EQ(last.exit_code, 0) << last.err;
  int64_t last_id = std::stoll(last.out);
  EXPECT_TRUE(WaitFor([&] { return finished(last_id); }, seconds(20))) << log();
}

}  // namespace
}  // namespace hpc::it
