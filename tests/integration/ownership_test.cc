// hpcplane changes only the Slurm objects it created. An admin's partitions, from extraConfig
// and from `scontrol create partition`, keep accepting jobs across autoscaling passes, a
// workspace launch and stop, a nodeset apply and delete, and a daemon restart; hpcplane's own
// partition whose nodeset is deleted is still removed.
#include <signal.h>
#include <sys/stat.h>

#include <set>

#include <gtest/gtest.h>

#include "common/files.h"
#include "common/subprocess.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

std::set<std::string> Partitions(TestCluster& c) {
  std::set<std::string> out;
  auto r = c.Login("root", {"scontrol", "-o", "show", "partition"});
  for (const auto& line : SplitLines(r.out)) {
    if (line.rfind("PartitionName=", 0) != 0) continue;
    out.insert(line.substr(14, line.find(' ') - 14));
  }
  return out;
}

bool Has(TestCluster& c, const std::string& partition) { return Partitions(c).count(partition) > 0; }

int64_t Sbatch(TestCluster& c, const std::vector<std::string>& args) {
  std::vector<std::string> cmd = {"sbatch", "--parsable", "-o", "/dev/null"};
  cmd.insert(cmd.end(), args.begin(), args.end());
  auto r = c.Login("alice", cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? std::atoll(Trim(r.out).c_str()) : -1;
}

// Both admin partitions take jobs: `debug` (the worker cpu-0) runs one to completion; `cloud`
// (power-saved nodes nobody resumes here) queues a held one.
void AdminPartitionsAcceptJobs(TestCluster& c, const std::string& when) {
  SCOPED_TRACE(when);
  auto parts = Partitions(c);
  ASSERT_TRUE(parts.count("cloud")) << "extraConfig's partition is gone";
  ASSERT_TRUE(parts.count("debug")) << "the admin's run-time partition is gone";
  int64_t held = Sbatch(c, {"-p", "cloud", "--hold", "--wrap", "true"});
  ASSERT_GT(held, 0);
  EXPECT_EQ(c.JobField(held, "JobState"), "PENDING");
  (void)c.Login("root", {"scancel", std::to_string(held)});
  int64_t ran = Sbatch(c, {"-p", "debug", "--wrap", "true"});
  ASSERT_GT(ran, 0);
  EXPECT_TRUE(WaitFor([&] { return c.JobField(ran, "JobState") == "COMPLETED"; }, 60s)) << c.JobField(ran, "JobState");
}

void ApplyNodeSet(TestCluster& c, const std::string& name) {
  std::string path = c.state_dir() + "/" + name + ".yaml";
  ASSERT_TRUE(files::WriteAtomic(path, "apiVersion: hpcplane.io/v1alpha1\nkind: NodeSet\nmetadata:\n  name: " + name +
                                           "\nspec:\n  maxReplicas: 1\n  resources:\n    cpus: 1\n    memoryMiB: 500\n")
                  .ok());
  auto r = c.Cli({"apply", "-f", path});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
}

pid_t DaemonPid(TestCluster& c) {
  auto line = files::Read(c.ClusterDir() + "/daemon.pid");
  return line.ok() ? std::atoi(line->c_str()) : 0;
}

TEST(OwnershipIT, AdminPartitionsSurviveEverythingHpcplaneDoes) {
  ClusterOptions o;
  o.replicas = 1;
  o.extra_config = {
      "NodeName=cloud-[0-1] CPUs=1 RealMemory=500 State=CLOUD Feature=cloud",
      "PartitionName=cloud Nodes=cloud-[0-1] State=UP",
  };
  TestCluster c("own", o);
  auto up = c.Up();
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  // The nodeset's worker (sinfo also lists the admin's power-saved cloud nodes).
  std::string worker;
  for (const auto& n : c.SinfoNodes()) {
    if (n.rfind("cpu-", 0) == 0) worker = n.substr(0, n.find(' '));
  }
  ASSERT_FALSE(worker.empty());
  // An admin makes a partition at run time, as docs/policies.md tells them to.
  auto created = c.Login("root", {"scontrol", "create", "PartitionName=debug", "Nodes=" + worker, "State=UP"});
  ASSERT_EQ(created.exit_code, 0) << created.err;
  AdminPartitionsAcceptJobs(c, "after bring-up");

  // A nodeset of hpcplane's own: its partition appears, and goes with it.
  ApplyNodeSet(c, "extra");
  ASSERT_TRUE(WaitFor([&] { return Has(c, "extra"); }, 30s));

  // A workspace: launch and stop (its partition is hpcplane's and is removed with it).
  ASSERT_EQ(c.Cli({"users", "add", "ann"}).exit_code, 0);
  auto launch = c.Cli({"workspace", "launch", "--user", "ann", "--project", "astro", "--tier", "small"}, 120s);
  ASSERT_EQ(launch.exit_code, 0) << launch.out << launch.err;
  ASSERT_TRUE(Has(c, "ann-astro"));
  auto stop = c.Cli({"workspace", "stop", "ann-astro", "--timeout", "90"}, 120s);
  ASSERT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  ASSERT_TRUE(WaitFor([&] { return !Has(c, "ann-astro"); }, 30s));

  auto del = c.Cli({"delete", "nodeset", "extra"});
  ASSERT_EQ(del.exit_code, 0) << del.out << del.err;
  EXPECT_TRUE(WaitFor([&] { return !Has(c, "extra"); }, 30s)) << "hpcplane's own partition was not removed";
  AdminPartitionsAcceptJobs(c, "after workspace and nodeset changes");

  // The daemon dies and comes back (kill -9, then `up` without -f): it still knows what is its own.
  pid_t daemon = DaemonPid(c);
  ASSERT_GT(daemon, 0);
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return hpc::ProcessStartTime(daemon) == 0; }, 10s));
  auto again = c.Cli({"up", "--detach", "--timeout", "90"}, 120s);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("the state dir's cluster \"" + c.name() + "\""), std::string::npos) << again.out;
  // A partition created after the restart proves the partition sync has run (its deletes run in
  // the same pass as its creates).
  ApplyNodeSet(c, "late");
  ASSERT_TRUE(WaitFor([&] { return Has(c, "late"); }, 30s));
  AdminPartitionsAcceptJobs(c, "after a daemon restart");

  auto log = files::Read(c.ClusterDir() + "/daemon.log").value_or("");
  EXPECT_EQ(log.find("partition cloud deleted"), std::string::npos);
  EXPECT_EQ(log.find("partition debug deleted"), std::string::npos);
  EXPECT_NE(log.find("partition extra deleted"), std::string::npos);
  struct stat st {};
  ASSERT_EQ(::stat((c.ClusterDir() + "/owned.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto ledger = files::Read(c.ClusterDir() + "/owned.json").value_or("");
  EXPECT_EQ(ledger.find("\"cloud\""), std::string::npos) << ledger;
  EXPECT_EQ(ledger.find("\"debug\""), std::string::npos) << ledger;
}

// `down` then `up` with no -f brings back the state dir's only cluster, not the demo beside it.
TEST(OwnershipIT, UpWithoutAFileRestartsTheStateDirsCluster) {
  TestCluster c("upa");
  ASSERT_EQ(c.Up().exit_code, 0);
  ASSERT_EQ(c.Down(false).exit_code, 0);
  RunOptions ro;
  ro.timeout = 120s;
  auto r = RunProcess({HPCPLANE_BIN, "--state-dir", c.state_dir(), "up", "--detach", "--timeout", "90"}, ro);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->exit_code, 0) << r->out << r->err;
  EXPECT_NE(r->out.find("Bringing up the state dir's cluster \"" + c.name() + "\""), std::string::npos) << r->out;
  EXPECT_EQ(files::ListDir(c.state_dir() + "/clusters"), std::vector<std::string>{c.name()});
  EXPECT_EQ(c.Login("alice", {"srun", "true"}).exit_code, 0);
}

}  // namespace
}  // namespace hpc::it
