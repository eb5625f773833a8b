// A backup slurmctld (spec.backupController) on real Slurm in local pods: when the primary's
// machine is lost (its slurmctld stopped, no heartbeat, its port unreachable from the pods), the
// backup takes over, serves the cluster's clients and hpcplane's own commands, and hands back
// when the primary returns; no job is lost on the way.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common/files.h"
#include "common/subprocess.h"
#include "harness.h"

namespace hpc::it {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

std::string ClusterStatus(TestCluster& c, const std::string& field) {
  auto j = nlohmann::json::parse(c.Cli({"get", "clusters", "-o", "json"}).out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0]["status"].contains(field)) return "";
  const auto& v = j[0]["status"][field];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

int Restarts(TestCluster& c, const std::string& pod) {
  auto pods = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
  for (const auto& p : pods) {
    if (p.value("name", "") == pod) return p.value("restarts", 0);
  }
  return -1;
}

// The index of the controller Slurm's heartbeat file names as serving (0 the primary, 1 the
// backup), read from the state volume: -1 when there is none.
int HeartbeatController(TestCluster& c) {
  auto bytes = files::Read(c.ClusterDir() + "/runtime/volumes/controller-state/heartbeat");
  if (!bytes.ok() || bytes->size() != 16) return -1;
  return static_cast<unsigned char>((*bytes)[15]);
}

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Runs `script` (sh) in pod `pod`'s network namespace, on the host's tools.
ProcessResult InPodNetwork(TestCluster& c, const std::string& pod, const std::string& script) {
  auto r = RunProcess({"ip", "netns", "exec", c.NetnsPrefix() + pod, "sh", "-c", script});
  return r.ok() ? *r : ProcessResult{};
}

TEST(Failover, TheBackupControllerServesWhenThePrimarysMachineIsLostAndHandsBackLosingNoJob) {
  ClusterOptions o;
  o.extra_cluster_spec = "  backupController:\n    enabled: true\n";
  TestCluster c("fo", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string primary = c.name() + "-controller", backup = primary + "-backup";
  auto diagnostics = [&] {
    return c.Cli({"status"}).out + c.Cli({"logs", backup, "--tail", "30"}).out +
           c.Cli({"logs", primary, "--tail", "30"}).out;
  };
  // Both controllers are in slurm.conf and answer Slurm's ping; the primary serves.
  ASSERT_TRUE(WaitFor([&] { return ClusterStatus(c, "leadingController") == primary; }, seconds(30))) << diagnostics();
  EXPECT_EQ(HeartbeatController(c), 0);
  const std::string ping = c.Login("root", {"scontrol", "ping"}).out;
  EXPECT_NE(ping.find("Slurmctld(primary) at " + primary + " is UP"), std::string::npos) << ping;
  EXPECT_NE(ping.find("Slurmctld(backup) at " + backup + " is UP"), std::string::npos) << ping;
  EXPECT_NE(c.Cli({"status"}).out.find("Leading controller: " + primary), std::string::npos);

  const int64_t long_job =
      JobIdFrom(c.Login("alice", {"sbatch", "-J", "fo-long", "--chdir", "/shared", "--wrap", "sleep 600"}).out);
  ASSERT_GT(long_job, 0);
  ASSERT_TRUE(WaitFor([&] { return c.JobField(long_job, "JobState") == "RUNNING"; }, seconds(30)));
  // slurmctld saves its state every few seconds: a job accepted just before the loss would be
  // lost with the primary (Slurm's own window, as for a kill -9). Lost only once it is saved.
  const std::string state_file = c.ClusterDir() + "/runtime/volumes/controller-state/job_state";
  ASSERT_TRUE(
      WaitFor([&] { return files::Read(state_file).value_or("").find("fo-long") != std::string::npos; }, seconds(30)));

  // The primary's machine is lost: its slurmctld stops (no heartbeat, no answer) and the other
  // pods' packets to its port vanish, as to a machine gone (the host's probes still reach it).
  const std::string gateway = c.subnet_prefix() + ".1";
  auto cut =
      InPodNetwork(c, primary,
                   "nft add table inet hpcfailover && nft add chain inet hpcfailover in "
                   "'{ type filter hook input priority -10; }' && nft add rule inet hpcfailover in ip saddr != " +
                       gateway + " tcp dport 6817 drop");
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  auto stop = c.Cli({"exec", primary, "--", "pkill", "-STOP", "-x", "slurmctld(-wlm)?"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  const auto lost = Clock::now();
  // hpcplane's status must name the backup while it serves (its passes are slower meanwhile:
  // each Slurm command tries the lost primary first), watched from here to the hand-back.
  std::atomic<bool> watching{true}, status_named_backup{false};
  std::thread watcher([&] {
    while (watching && !status_named_backup) {
      if (ClusterStatus(c, "leadingController") == backup) status_named_backup = true;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
  });
  struct StopWatching {  // ends the watcher on every way out, a failed assertion's too
    std::atomic<bool>& watching;
    std::thread& watcher;
    ~StopWatching() {
      watching = false;
      if (watcher.joinable()) watcher.join();
    }
  } stop_watching{watching, watcher};
  ASSERT_TRUE(WaitFor([&] { return HeartbeatController(c) == 1; }, seconds(30))) << diagnostics();
  const double takeover = SecondsSince(lost);
  std::cout << "the backup serves " << takeover << " s after the primary was lost\n";
  EXPECT_LE(takeover, 15.0) << "SlurmctldTimeout (6 s), the heartbeat's age, and its start";

  // Clients reach it (their try of the primary ends at Slurm's TCPTimeout), and it schedules.
  const int64_t during =
      JobIdFrom(c.Login("alice", {"sbatch", "-J", "fo-during", "--chdir", "/shared", "--wrap", "true"}).out);
  ASSERT_GT(during, long_job) << diagnostics();
  ASSERT_TRUE(WaitFor([&] { return c.JobField(during, "JobState") == "COMPLETED"; }, seconds(30))) << diagnostics();
  std::cout << "a job submitted to the backup completed " << SecondsSince(lost) << " s after the loss\n";
  EXPECT_EQ(c.JobField(long_job, "JobState"), "RUNNING");

  // The machine comes back and slurmctld starts again on it (before the primary's liveness probe
  // would restart it, at least 30 s after the loss, while still cut off): the primary takes back
  // over from the state the backup saved, once the backup has saved it and stood down.
  ASSERT_EQ(InPodNetwork(c, primary, "nft delete table inet hpcfailover").exit_code, 0);
  c.Cli({"exec", primary, "--", "pkill", "-9", "-x", "slurmctld(-wlm)?"});
  ASSERT_TRUE(WaitFor([&] { return HeartbeatController(c) == 0; }, seconds(60))) << diagnostics();
  std::cout << "the primary serves again " << SecondsSince(lost) << " s after the loss\n";
  watching = false;
  watcher.join();
  EXPECT_TRUE(status_named_backup) << "the status never named the backup while it served";
  ASSERT_TRUE(WaitFor([&] { return ClusterStatus(c, "leadingController") == primary; }, seconds(30))) << diagnostics();
  EXPECT_EQ(c.JobField(long_job, "JobState"), "RUNNING") << diagnostics();
  EXPECT_EQ(c.JobField(during, "JobState"), "COMPLETED") << diagnostics();
  const int64_t after =
      JobIdFrom(c.Login("alice", {"sbatch", "-J", "fo-after", "--chdir", "/shared", "--wrap", "true"}).out);
  ASSERT_GT(after, during) << "a job id handed out twice";
  ASSERT_TRUE(WaitFor([&] { return c.JobField(after, "JobState") == "COMPLETED"; }, seconds(30))) << diagnostics();
  EXPECT_GE(Restarts(c, primary), 1);
  EXPECT_EQ(Restarts(c, backup), 0) << "the backup stands by again, restarted by nothing";
  c.Login("alice", {"scancel", std::to_string(long_job)});
}

}  // namespace
}  // namespace hpc::it
