// Workspaces against real Slurm, slurmdbd and MariaDB: per-user login pods with their own
// autoscaled nodeset and partition, tokens, datasets, admin rights, and a clean stop.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

ClusterOptions NoStaticWorkers() {
  ClusterOptions o;
  o.replicas = 0;
  return o;
}

void AddUser(TestCluster& c, const std::string& name, const std::string& role = "User") {
  auto r = c.Cli({"users", "add", name, "--role", role});
  ASSERT_EQ(r.exit_code, 0) << r.err;
}

void Launch(TestCluster& c, const std::string& user, const std::string& project,
            const std::vector<std::string>& extra = {}) {
  std::vector<std::string> args = {"workspace", "launch", "--user",        user, "--project",      project,
                                   "--tier",    "small",  "--max-workers", "2",  "--idle-timeout", "5s"};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = c.Cli(args, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("is ready"), std::string::npos) << r.out;
}

// Runs a command in a workspace's login pod, as its user, through the CLI.
ProcessResult InWorkspace(TestCluster& c, const std::string& ws, const std::vector<std::string>& cmd,
                          std::chrono::milliseconds timeout = 60s) {
  std::vector<std::string> args = {"workspace", "exec", ws, "--"};
  args.insert(args.end(), cmd.begin(), cmd.end());
  return c.Cli(args, timeout);
}

int64_t Submit(TestCluster& c, const std::string& ws, const std::vector<std::string>& sbatch_args) {
  std::vector<std::string> cmd = {"sbatch", "--parsable"};
  cmd.insert(cmd.end(), sbatch_args.begin(), sbatch_args.end());
  auto r = InWorkspace(c, ws, cmd);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? std::atoll(Trim(r.out).c_str()) : -1;
}

bool JobIs(TestCluster& c, int64_t id, const std::string& state) { return c.JobField(id, "JobState") == state; }

// One field of the job's allocation record in slurmdbd, through sacct in the cluster.
std::string Sacct(TestCluster& c, int64_t id, const std::string& field) {
  auto r = c.Login("root", {"sacct", "-n", "-X", "-P", "-j", std::to_string(id), "--format=" + field});
  return r.exit_code == 0 ? Trim(r.out) : "";
}

int64_t Uid(TestCluster& c, const std::string& user) {
  auto r = c.Cli({"users", "list"});
  for (const auto& line : SplitLines(r.out)) {
    std::istringstream in(line);
    std::string name, slurm, uid;
    in >> name >> slurm >> uid;
    if (slurm == user) return std::atoll(uid.c_str());
  }
  return -1;
}

TEST(Workspace, TwoUsersRunOnTheirOwnWorkersAndStopLeavesNothingBehind) {
  TestCluster c("ws", NoStaticWorkers());
  ASSERT_EQ(c.Up().exit_code, 0);
  AddUser(c, "ann@example.org");
  AddUser(c, "ben");
  Launch(c, "ann", "astro");
  Launch(c, "ben", "bio");
  // Each workspace has its own nodeset and partition, scaled to zero until a job comes.
  auto nodesets = c.Cli({"get", "nodesets"});
  EXPECT_NE(nodesets.out.find("ann-astro"), std::string::npos) << nodesets.out;
  EXPECT_NE(nodesets.out.find("ben-bio"), std::string::npos) << nodesets.out;
  EXPECT_TRUE(c.SinfoNodes().empty());

  int64_t a = Submit(c, "ann-astro", {"-o", "/datasets/astro/out-%j.txt", "--wrap", "id -u; hostname"});
  int64_t b = Submit(c, "ben-bio", {"-o", "/datasets/bio/out-%j.txt", "--wrap", "id -u; hostname"});
  ASSERT_GT(a, 0);
  ASSERT_GT(b, 0);
  ASSERT_TRUE(WaitFor([&] { return JobIs(c, a, "COMPLETED") && JobIs(c, b, "COMPLETED"); }, 90s))
      << c.JobField(a, "JobState") << " " << c.JobField(b, "JobState");
  // Ran as the user's uid on the workspace's own worker; output in the project's dataset,
  // owned by the user, and visible from the login pod.
  auto out_a = InWorkspace(c, "ann-astro", {"cat", "/datasets/astro/out-" + std::to_string(a) + ".txt"});
  EXPECT_EQ(out_a.out, std::to_string(Uid(c, "ann")) + "\nann-astro-0\n");
  auto out_b = InWorkspace(c, "ben-bio", {"cat", "/datasets/bio/out-" + std::to_string(b) + ".txt"});
  EXPECT_EQ(out_b.out, std::to_string(Uid(c, "ben")) + "\nben-bio-0\n");
  struct stat st {};
  ASSERT_EQ(::stat((c.ClusterDir() + "/runtime/volumes/dataset-astro/out-" + std::to_string(a) + ".txt").c_str(), &st),
            0);
  EXPECT_EQ(static_cast<int64_t>(st.st_uid), Uid(c, "ann"));
  // The workspace shell runs as the user, never root.
  EXPECT_EQ(Trim(InWorkspace(c, "ann-astro", {"id", "-un"}).out), "ann");

  // Slurm itself refuses ann on ben's partition.
  auto refused = InWorkspace(c, "ann-astro", {"sbatch", "-p", "ben-bio", "--wrap", "true"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("not permitted to use this partition"), std::string::npos) << refused.err;

  // Stopping ann's workspace (cancelling her running job) leaves ben's job running.
  int64_t ann_long = Submit(c, "ann-astro", {"-o", "/dev/null", "--wrap", "sleep 300"});
  int64_t ben_long = Submit(c, "ben-bio", {"-o", "/dev/null", "--wrap", "sleep 12"});
  ASSERT_TRUE(WaitFor([&] { return JobIs(c, ann_long, "RUNNING") && JobIs(c, ben_long, "RUNNING"); }, 60s));
  auto stop = c.Cli({"workspace", "stop", "ann-astro", "--cancel-jobs", "--timeout", "90"}, 120s);
  ASSERT_EQ(stop.exit_code, 0) << stop.out << stop.err;
  // Once stop returns, Slurm no longer has the partition (it used to for about a second more).
  auto gone = c.Login("root", {"scontrol", "show", "partition", "ann-astro"});
  EXPECT_NE(gone.exit_code, 0) << gone.out;
  EXPECT_EQ(c.JobField(ann_long, "JobState"), "CANCELLED");
  EXPECT_EQ(c.JobField(ben_long, "JobState"), "RUNNING");
  ASSERT_TRUE(WaitFor([&] { return JobIs(c, ben_long, "COMPLETED"); }, 60s));
  EXPECT_EQ(c.JobField(ben_long, "ExitCode"), "0:0");
  EXPECT_EQ(c.JobField(ben_long, "Restarts"), "0");

  // Nothing of ann's workspace is left: pods, nodeset, partition, Slurm nodes, token.
  auto pods = c.Cli({"get", "pods"});
  EXPECT_EQ(pods.out.find("ann-astro"), std::string::npos) << pods.out;
  EXPECT_EQ(c.Cli({"get", "nodesets"}).out.find("ann-astro"), std::string::npos);
  auto partitions = c.Login("root", {"sinfo", "-h", "-o", "%P"});
  EXPECT_EQ(partitions.out.find("ann-astro"), std::string::npos) << partitions.out;
  for (const auto& n : c.SinfoNodes()) EXPECT_EQ(n.find("ann-astro"), std::string::npos) << n;
  auto nodes = c.Login("root", {"scontrol", "show", "node", "ann-astro-0"});
  EXPECT_NE(nodes.exit_code, 0) << nodes.out;
  EXPECT_FALSE(files::Exists(c.ClusterDir() + "/runtime/secrets/ann-astro-token"));
  EXPECT_NE(c.Cli({"workspace", "list"}).out.find("ben-bio"), std::string::npos);
  EXPECT_EQ(c.Cli({"workspace", "list"}).out.find("ann-astro"), std::string::npos);

  // Job history outlives the workspace, with runtime statistics.
  ASSERT_TRUE(WaitFor([&] { return Sacct(c, a, "State") == "COMPLETED"; }, 30s)) << Sacct(c, a, "State");
  EXPECT_EQ(Sacct(c, a, "Partition"), "ann-astro");
  EXPECT_EQ(Sacct(c, a, "ExitCode"), "0:0");
  EXPECT_EQ(Sacct(c, a, "NodeList"), "ann-astro-0");
  EXPECT_EQ(Sacct(c, ann_long, "State").rfind("CANCELLED", 0), 0u) << Sacct(c, ann_long, "State");
  auto steps =
      c.Login("root", {"sacct", "-n", "-P", "-j", std::to_string(a), "--format=JobID,Elapsed,TotalCPU,MaxRSS"});
  EXPECT_NE(steps.out.find(std::to_string(a) + ".batch|"), std::string::npos) << steps.out;
}

TEST(Workspace, UserNamesAreCheckedAndOnlySysAdminsAdministerSlurm) {
  TestCluster c("wsadm", NoStaticWorkers());
  ASSERT_EQ(c.Up().exit_code, 0);
  auto reserved = c.Cli({"users", "add", "root"});
  EXPECT_NE(reserved.exit_code, 0);
  EXPECT_NE(reserved.err.find("reserved system name"), std::string::npos) << reserved.err;
  auto invalid = c.Cli({"users", "add", "9lives"});
  EXPECT_NE(invalid.exit_code, 0);
  EXPECT_NE(invalid.err.find("^[a-z_][a-z0-9_-]{0,31}$"), std::string::npos) << invalid.err;
  for (const char* bad : {"root", "slurm", "Bad!Name"}) {
    auto r = c.Cli({"workspace", "launch", "--user", bad, "--project", "p"});
    EXPECT_NE(r.exit_code, 0) << bad;
    EXPECT_TRUE(r.err.find("reserved") != std::string::npos || r.err.find("must match") != std::string::npos) << r.err;
  }
  EXPECT_FALSE(files::Exists(c.ClusterDir() + "/workspaces"));
  EXPECT_TRUE(SplitLines(c.Cli({"users", "list"}).out).size() == 1);  // header only
  // A tier larger than a node of this machine is refused with the numbers.
  auto huge = c.Cli({"tiers", "add", "huge", "--cpus", "4096", "--memory-mib", "1024"});
  EXPECT_NE(huge.exit_code, 0);
  EXPECT_NE(huge.err.find("asks 4096 CPUs"), std::string::npos) << huge.err;

  AddUser(c, "carol", "SysAdmin");
  AddUser(c, "dan");
  Launch(c, "carol", "ops");
  Launch(c, "dan", "ml");
  // SysAdmin maps to Slurm's administrator level: scontrol changes work for carol ...
  auto admin = InWorkspace(c, "carol-ops", {"scontrol", "update", "PartitionName=dan-ml", "MaxTime=30"});
  EXPECT_EQ(admin.exit_code, 0) << admin.err;
  EXPECT_NE(c.Login("root", {"scontrol", "show", "partition", "dan-ml"}).out.find("MaxTime=00:30:00"),
            std::string::npos);
  // ... and are refused for dan, even on his own partition.
  auto user = InWorkspace(c, "dan-ml", {"scontrol", "update", "PartitionName=dan-ml", "MaxTime=60"});
  EXPECT_NE(user.exit_code, 0);
  EXPECT_NE(c.Login("root", {"scontrol", "show", "partition", "dan-ml"}).out.find("MaxTime=00:30:00"),
            std::string::npos);
  // Admins may use every workspace's partition; dan may not use carol's.
  int64_t j = Submit(c, "carol-ops", {"-p", "dan-ml", "-o", "/dev/null", "--wrap", "true"});
  EXPECT_GT(j, 0);
  EXPECT_NE(InWorkspace(c, "dan-ml", {"sbatch", "-p", "carol-ops", "--wrap", "true"}).exit_code, 0);
}

TEST(Workspace, ExpiredTokenIsRefusedAndTheRefreshedOneWorksInTheSameLoginPod) {
  TestCluster c("wstok", NoStaticWorkers());
  ASSERT_EQ(c.Up().exit_code, 0);
  AddUser(c, "erin");
  Launch(c, "erin", "chem", {"--token-lifetime", "12s"});
  std::string first = InWorkspace(c, "erin-chem", {"cat", "/run/secrets/slurm-token/token"}).out;
  int64_t expires = std::atoll(InWorkspace(c, "erin-chem", {"cat", "/run/secrets/slurm-token/expires"}).out.c_str());
  ASSERT_FALSE(first.empty());
  // The token file is the user's alone.
  EXPECT_NE(InWorkspace(c, "erin-chem", {"stat", "-c", "%a %U", "/run/secrets/slurm-token/token"}).out.find("600 erin"),
            std::string::npos);
  EXPECT_EQ(InWorkspace(c, "erin-chem", {"env", "SLURM_JWT=" + first, "/usr/bin/squeue"}).exit_code, 0);
  ASSERT_TRUE(WaitFor([&] { return std::time(nullptr) > expires + 1; }, 30s));
  auto expired = InWorkspace(c, "erin-chem", {"env", "SLURM_JWT=" + first, "/usr/bin/squeue"});
  EXPECT_NE(expired.exit_code, 0) << expired.out;
  // The login pod's commands read the renewed token: no relaunch needed.
  auto renewed = InWorkspace(c, "erin-chem", {"squeue", "-h"});
  EXPECT_EQ(renewed.exit_code, 0) << renewed.err;
  EXPECT_NE(InWorkspace(c, "erin-chem", {"cat", "/run/secrets/slurm-token/token"}).out, first);
  int64_t j = Submit(c, "erin-chem", {"-o", "/dev/null", "--wrap", "srun true"});
  ASSERT_GT(j, 0);
  // srun inside the job works: the token is not passed on to tasks (slurmd takes no token: Slurm's own authentication
  // only).
  ASSERT_TRUE(WaitFor([&] { return JobIs(c, j, "COMPLETED") || JobIs(c, j, "FAILED"); }, 60s));
  EXPECT_EQ(c.JobField(j, "ExitCode"), "0:0");
}

TEST(Accounting, ClusterRunsWhileTheDatabaseIsAwayAndRecordsJobsOnceItIsBack) {
  ClusterOptions o;
  o.replicas = 1;
  TestCluster c("acct", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  auto versions = c.Cli({"describe", "cluster"});
  EXPECT_NE(versions.out.find("slurm/slurmdbd"), std::string::npos) << versions.out;
  // Freeze MariaDB: slurmdbd cannot store anything, slurmctld must keep scheduling.
  ASSERT_EQ(c.Cli({"exec", c.name() + "-mariadb", "--", "pkill", "-STOP", "-x", "mariadbd"}).exit_code, 0);
  auto r = c.Login("alice", {"sbatch", "--parsable", "-o", "/dev/null", "--wrap", "true"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  int64_t id = std::atoll(Trim(r.out).c_str());
  EXPECT_TRUE(WaitFor([&] { return JobIs(c, id, "COMPLETED"); }, 60s)) << c.JobField(id, "JobState");
  ASSERT_EQ(c.Cli({"exec", c.name() + "-mariadb", "--", "pkill", "-CONT", "-x", "mariadbd"}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return Sacct(c, id, "State") == "COMPLETED"; }, 90s)) << Sacct(c, id, "State");
  EXPECT_EQ(Sacct(c, id, "User"), "alice");
}

}  // namespace
}  // namespace hpc::it
