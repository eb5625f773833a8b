// Integration tests of the foundation against real sackd, slurmctld, slurmrestd and slurmd.
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "harness.h"

namespace hpc::it {
namespace {

using std::chrono::seconds;

std::string JobField(TestCluster& c, int64_t id, const std::string& field) {
  auto r = c.Login("root", {"scontrol", "show", "job", std::to_string(id)});
  auto pos = r.out.find(field + "=");
  if (pos == std::string::npos) return "";
  auto end = r.out.find_first_of(" \n", pos);
  return r.out.substr(pos + field.size() + 1, end - pos - field.size() - 1);
}

std::set<std::string> PodNames(TestCluster& c) {
  auto r = c.Cli({"get", "pods", "-o", "json"});
  std::set<std::string> names;
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (!j.is_array()) return names;
  for (const auto& p : j) names.insert(p.value("name", ""));
  return names;
}

// Processes, namespaces, links and mounts that belong to this cluster.
std::vector<std::string> Leftovers(TestCluster& c) {
  std::vector<std::string> left;
  for (const auto& ns : files::ListDir("/run/netns")) {
    if (ns.rfind(c.NetnsPrefix(), 0) == 0) left.push_back("netns " + ns);
  }
  auto links = RunProcess({"ip", "-o", "link", "show"});
  for (const auto& line : SplitLines(links.ok() ? links->out : "")) {
    if (line.find(c.LinkPrefix()) != std::string::npos) left.push_back("link " + line.substr(0, 40));
    if (line.find(": hpb" + c.LinkPrefix().substr(3) + ":") != std::string::npos) left.push_back("bridge");
  }
  for (const auto& pid : files::ListDir("/proc")) {
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    auto cmd = files::Read("/proc/" + pid + "/cmdline");
    if (cmd.ok() && cmd->find(c.state_dir()) != std::string::npos) left.push_back("process " + pid);
  }
  auto mounts = files::Read("/proc/self/mountinfo");
  if (mounts.ok() && mounts->find(c.state_dir()) != std::string::npos) left.push_back("mount");
  return left;
}

// Configless workers (Slurm 23.11 on): a change beyond nodesets and partitions (the priority
// plugin) reaches slurmctld and every slurmd's copy through `scontrol reconfigure` alone, no
// worker mounts slurm.conf or is replaced for it, and jobs run after it.
TEST(ClusterIT, AConfigChangeReachesSlurmctldAndEveryConfiglessSlurmd) {
  ClusterOptions o;
  o.extra_config = {"SlurmdTimeout=60"};
  TestCluster c("cfl", o);
  auto up = c.Up();
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  auto worker_started = [&] {
    std::map<std::string, std::string> started;
    auto pods = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
    for (const auto& p : pods) {
      if (p.value("name", "").rfind("cpu-", 0) == 0) started[p.value("name", "")] = p.dump();
    }
    return started;
  };
  auto workers = worker_started();
  ASSERT_EQ(workers.size(), 2u);
  for (const auto& [w, _] : workers) {
    auto mounted = c.Cli({"exec", w, "--", "test", "-e", "/etc/slurm/slurm.conf"});
    EXPECT_NE(mounted.exit_code, 0) << w << " reads no slurm.conf of its own";
  }

  auto manifest = files::Read(c.manifest_path());
  ASSERT_TRUE(manifest.ok());
  std::string changed = *manifest;
  const std::string at = "  scheduling:\n";
  ASSERT_NE(changed.find(at), std::string::npos) << changed;
  changed.replace(changed.find(at), at.size(), at + "    priorityType: priority/basic\n");
  ASSERT_TRUE(files::WriteAtomic(c.state_dir() + "/changed.yaml", changed).ok());
  const auto applied = std::chrono::steady_clock::now();
  auto apply = c.Cli({"apply", "-f", c.state_dir() + "/changed.yaml"});
  ASSERT_EQ(apply.exit_code, 0) << apply.out << apply.err;
  auto everywhere = [&] {
    auto ctld = c.Cli({"exec", c.name() + "-controller", "--", "scontrol", "show", "config"});
    if (ctld.out.find("priority/basic") == std::string::npos) return false;
    for (const auto& [w, _] : workers) {
      auto copy = c.Cli({"exec", w, "--", "grep", "-x", "PriorityType=priority/basic", "/run/slurm/conf/slurm.conf"});
      if (copy.exit_code != 0) return false;
    }
    return true;
  };
  ASSERT_TRUE(WaitFor(everywhere, seconds(30))) << "slurmctld or a slurmd never read the change";
  std::cout << "config change in slurmctld and both slurmds after "
            << std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - applied).count()
            << " ms" << std::endl;
  EXPECT_EQ(worker_started(), workers) << "no worker replaced or restarted for a reconfigure";
  auto srun = c.Login("alice", {"srun", "-N2", "true"});
  EXPECT_EQ(srun.exit_code, 0) << srun.err;
}

// Bring-up reaches Ready; srun and sbatch -N2 run on two workers; output lands in the shared
// volume owned by the submitting user.
TEST(ClusterIT, BringUpAndRunJobsAcrossTwoWorkers) {
  TestCluster c("up");
  auto up = c.Up();
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  EXPECT_NE(up.out.find("is Ready"), std::string::npos) << up.out;
  EXPECT_NE(up.out.find("nodeset cpu"), std::string::npos) << up.out;

  auto status = c.Cli({"get", "clusters", "-o", "json"});
  auto sj = nlohmann::json::parse(status.out, nullptr, false);
  ASSERT_TRUE(sj.is_array()) << status.out;
  // The default environment's Slurm (api/environments.h).
  EXPECT_EQ(sj[0]["status"]["componentVersions"].value("slurm/slurmctld", "").rfind("26.05.", 0), 0u) << sj.dump();

  auto srun = c.Login("alice", {"srun", "-N2", "hostname"});
  ASSERT_EQ(srun.exit_code, 0) << srun.err;
  auto hosts = SplitLines(srun.out);
  std::sort(hosts.begin(), hosts.end());
  EXPECT_EQ(hosts, (std::vector<std::string>{"cpu-0", "cpu-1"}));

  auto sbatch = c.Login("alice", {"sbatch", "-N2", "--wait", "--chdir", "/shared", "-o", "out-%j.txt", "--wrap",
                                  "srun hostname; id -un"});
  ASSERT_EQ(sbatch.exit_code, 0) << sbatch.out << sbatch.err;
  int64_t id = JobIdFrom(sbatch.out);
  ASSERT_GT(id, 0) << sbatch.out;
  std::string path = c.SharedVolume() + "/out-" + std::to_string(id) + ".txt";
  auto output = files::Read(path);
  ASSERT_TRUE(output.ok()) << output.status().message();
  EXPECT_NE(output->find("cpu-0"), std::string::npos) << *output;
  EXPECT_NE(output->find("cpu-1"), std::string::npos) << *output;
  EXPECT_NE(output->find("alice"), std::string::npos) << *output;
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 2001u);  // the job ran as alice, not root

  // A worker asks for its nodeset's shape, and says plainly what this host does not enforce.
  auto describe = c.Cli({"describe", "pod", "cpu-0"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("memoryMiB: 500"), std::string::npos) << describe.out;
  auto pods = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
  ASSERT_TRUE(pods.is_array());
  for (const auto& p : pods) {
    if (p["name"] != "cpu-0") continue;
    EXPECT_EQ(p["resources"]["requests"], (nlohmann::json{{"cpus", 1}, {"memoryMiB", 500}})) << p;
  }
  EXPECT_NE(describe.out.find("requests.memoryMiB: not reserved: every local pod runs on this machine"),
            std::string::npos)
      << describe.out;
  EXPECT_NE(describe.out.find("requests.cpus: "), std::string::npos) << describe.out;  // a cpuset, or why not

  // Every pod's routes ACK at once: Slurm's RPCs (two writes, no TCP_NODELAY) would otherwise
  // wait ~40 ms on each delayed ACK.
  int pods_seen = 0;
  for (const auto& ns : files::ListDir("/run/netns")) {
    if (ns.rfind(c.NetnsPrefix(), 0) != 0) continue;
    ++pods_seen;
    auto routes = RunProcess({"ip", "-n", ns, "route", "show"});
    ASSERT_TRUE(routes.ok());
    for (const auto& line : SplitLines(routes->out))
      EXPECT_NE(line.find("quickack 1"), std::string::npos) << ns << ": " << line;
  }
  EXPECT_GE(pods_seen, 6);
}

// Scaling by hand 2→3→1: idle workers are drained and removed, a worker running a job is kept
// until the job ends, and the job completes.
TEST(ClusterIT, ScaleByHandKeepsBusyWorkerUntilJobEnds) {
  TestCluster c("sc");
  ASSERT_EQ(c.Up().exit_code, 0);
  auto up3 = c.Cli({"scale", "nodeset", "cpu", "--replicas", "3", "--wait", "--timeout", "60"});
  ASSERT_EQ(up3.exit_code, 0) << up3.out << up3.err;
  EXPECT_EQ(c.SinfoNodes(), (std::vector<std::string>{"cpu-0 idle", "cpu-1 idle", "cpu-2 idle"}));

  auto sb = c.Login("alice", {"sbatch", "-w", "cpu-2", "--chdir", "/shared", "--wrap", "sleep 8"});
  int64_t id = JobIdFrom(sb.out);
  ASSERT_GT(id, 0) << sb.out << sb.err;
  ASSERT_TRUE(WaitFor([&] { return JobField(c, id, "JobState") == "RUNNING"; }, seconds(30)));

  auto down1 = c.Cli({"scale", "nodeset", "cpu", "--replicas", "1"});
  ASSERT_EQ(down1.exit_code, 0) << down1.err;
  // The idle workers go; the busy one stays while its job runs.
  ASSERT_TRUE(WaitFor([&] { return PodNames(c).count("cpu-0") == 0 && PodNames(c).count("cpu-1") == 0; }, seconds(30)));
  EXPECT_EQ(JobField(c, id, "JobState"), "RUNNING");
  EXPECT_EQ(PodNames(c).count("cpu-2"), 1u);
  auto nodes = c.SinfoNodes();
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].rfind("cpu-2 ", 0), 0u) << nodes[0];

  // Once the job ends normally, its worker is drained-and-idle and goes too... down to the one
  // desired worker, which is cpu-2 itself: it is resumed rather than removed.
  ASSERT_TRUE(WaitFor([&] { return JobField(c, id, "JobState") == "COMPLETED"; }, seconds(30)));
  EXPECT_EQ(JobField(c, id, "ExitCode"), "0:0");
  ASSERT_TRUE(WaitFor([&] { return c.SinfoNodes().size() == 1; }, seconds(20)));
  auto ns = c.Cli({"get", "nodesets", "-o", "json"});
  auto j = nlohmann::json::parse(ns.out, nullptr, false);
  ASSERT_TRUE(j.is_array());
  EXPECT_EQ(j[0]["status"].value("replicas", -1), 1);
}

// kill -9 of slurmctld: the runtime restarts the pod and Slurm recovers queued and running jobs.
TEST(ClusterIT, ControllerKill9IsRestartedWithJobsPreserved) {
  TestCluster c("k9");
  ASSERT_EQ(c.Up().exit_code, 0);
  int64_t running =
      JobIdFrom(c.Login("alice", {"sbatch", "-J", "k9-running-job", "--chdir", "/shared", "--wrap", "sleep 120"}).out);
  int64_t queued = JobIdFrom(
      c.Login("alice", {"sbatch", "-J", "k9-queued-job", "--chdir", "/shared", "--begin=now+3600", "--wrap", "true"})
          .out);
  ASSERT_GT(running, 0);
  ASSERT_GT(queued, 0);
  ASSERT_TRUE(WaitFor([&] { return JobField(c, running, "JobState") == "RUNNING"; }, seconds(30)));
  std::string node = JobField(c, running, "NodeList");
  // slurmctld saves job state asynchronously; kill only once both jobs are on disk (their
  // names are stored verbatim in job_state), as any crash-consistency test must.
  const std::string state_file = c.ClusterDir() + "/runtime/volumes/controller-state/job_state";
  ASSERT_TRUE(WaitFor(
      [&] {
        auto st = files::Read(state_file);
        return st.ok() && st->find("k9-running-job") != std::string::npos &&
               st->find("k9-queued-job") != std::string::npos;
      },
      seconds(30)));

  auto kill = c.Cli({"exec", c.name() + "-controller", "--", "pkill", "-9", "-x", "slurmctld(-wlm)?"});
  // 137: pkill itself was ended with the pod's PID namespace when slurmctld (its init's child) died.
  ASSERT_TRUE(kill.exit_code == 0 || kill.exit_code == 137) << kill.exit_code << kill.err;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto pods = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
        for (const auto& p : pods) {
          if (p.value("name", "") == c.name() + "-controller")
            return p.value("restarts", 0) >= 1 && p.value("ready", false);
        }
        return false;
      },
      seconds(30)));
  ASSERT_TRUE(WaitFor([&] { return JobField(c, running, "JobState") == "RUNNING"; }, seconds(30)));
  EXPECT_EQ(JobField(c, running, "NodeList"), node);
  EXPECT_EQ(JobField(c, queued, "JobState"), "PENDING")
      << c.Login("root", {"squeue"}).out << c.Cli({"logs", c.name() + "-controller", "--tail", "40"}).out;
  c.Login("alice", {"scancel", std::to_string(running), std::to_string(queued)});
}

// A hung daemon (stopped, so its port still accepts connections) is restarted by its liveness
// probe, and the cluster works again.
TEST(ClusterIT, AHungSlurmrestdIsRestartedByItsLivenessProbe) {
  TestCluster c("lv");
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string pod = c.name() + "-restapi";
  auto stop = c.Cli({"exec", pod, "--", "pkill", "-STOP", "-x", "slurmrestd"});
  ASSERT_EQ(stop.exit_code, 0) << stop.err;
  nlohmann::json restarted;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto pods = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
        for (const auto& p : pods) {
          if (p.value("name", "") == pod && p.value("restarts", 0) >= 1 && p.value("ready", false)) restarted = p;
        }
        return restarted.is_object();
      },
      seconds(90)));
  const std::string log = files::Read(c.ClusterDir() + "/daemon.log").value_or("");
  EXPECT_NE(log.find("pod " + pod + " killed: its liveness probe failed 3 times in a row"), std::string::npos) << log;
  // Slurm's REST API answers again: the daemon sees the nodes through it.
  ASSERT_TRUE(WaitFor([&] { return c.NodeSetStatusField("ready") == "2"; }, seconds(30)));
  EXPECT_EQ(c.Login("alice", {"srun", "-N2", "true"}).exit_code, 0);
}

// Hung (SIGSTOP), not dead: MariaDB and slurmdbd are restarted by their liveness probes, and
// accounting works again afterwards.
TEST(ClusterIT, HungAccountingDaemonsAreRestartedByTheirLivenessProbes) {
  TestCluster c("la");
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string db = c.name() + "-mariadb", dbd = c.name() + "-slurmdbd";
  auto restarts = [&](const std::string& name) {
    auto pods = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
    for (const auto& p : pods) {
      if (p.value("name", "") == name) return p.value("ready", false) ? p.value("restarts", 0) : -1;
    }
    return -1;
  };
  // slurmdbd may have restarted once while MariaDB came up: what counts is a restart from here.
  const int db_before = restarts(db), dbd_before = restarts(dbd);
  ASSERT_EQ(c.Cli({"exec", db, "--", "pkill", "-STOP", "-x", "mariadbd"}).exit_code, 0);
  ASSERT_EQ(c.Cli({"exec", dbd, "--", "pkill", "-STOP", "-x", "slurmdbd"}).exit_code, 0);
  auto restarted = [&](const std::string& name) { return restarts(name) > (name == db ? db_before : dbd_before); };
  ASSERT_TRUE(WaitFor([&] { return restarted(db) && restarted(dbd); }, seconds(180)))
      << files::Read(c.ClusterDir() + "/daemon.log").value_or("");
  const std::string log = files::Read(c.ClusterDir() + "/daemon.log").value_or("");
  EXPECT_NE(log.find("pod " + db + " killed: its liveness probe failed"), std::string::npos) << log;
  EXPECT_NE(log.find("pod " + dbd + " killed: its liveness probe failed"), std::string::npos) << log;
  // A job run now reaches the accounting database.
  auto run = c.Login("alice", {"srun", "-N1", "--comment", "after-hang", "true"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto r = c.Login("alice", {"sacct", "-n", "-X", "-P", "--format=Comment,State"});
        return r.out.find("after-hang|COMPLETED") != std::string::npos;
      },
      seconds(60)));
}

// `down` leaves no process, network namespace, link, bridge or mount behind.
TEST(ClusterIT, DownLeavesNothingBehind) {
  TestCluster c("dn");
  ASSERT_EQ(c.Up().exit_code, 0);
  EXPECT_FALSE(Leftovers(c).empty());  // the check sees a running cluster
  auto down = c.Down(false);
  ASSERT_EQ(down.exit_code, 0) << down.err;
  auto left = Leftovers(c);
  EXPECT_TRUE(left.empty()) << left.front();
  // Keys and Slurm state survive a plain down.
  EXPECT_TRUE(files::Exists(c.ClusterDir() + "/runtime/secrets/slurm-key/slurm.key"));
  EXPECT_TRUE(files::Exists(c.ClusterDir() + "/runtime/volumes/controller-state"));
  struct stat st {};
  ASSERT_EQ(::stat((c.ClusterDir() + "/runtime/secrets/jwt-key/jwt_hs256.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // auth/slurm's key: Slurm refuses one that others may read.
  ASSERT_EQ(::stat((c.ClusterDir() + "/runtime/secrets/slurm-key/slurm.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

// `down` and `up` while a job runs (it started a moment before: Slurm's own check, on slurmd's
// first registration, spares jobs younger than BatchStartTimeout): the job ended with its worker,
// so it is requeued instead of counted RUNNING for ever on the worker started again, and the job
// queued behind it runs.
TEST(ClusterIT, DownAndUpWhileAJobRunsRequeuesItAndTheQueueMovesOn) {
  ClusterOptions o;
  o.replicas = 1;
  TestCluster c("ghost", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  const int64_t running = JobIdFrom(c.Login("alice", {"sbatch", "-o", "/dev/null", "--wrap", "sleep 600"}).out);
  ASSERT_GT(running, 0);
  ASSERT_TRUE(WaitFor([&] { return c.JobField(running, "JobState") == "RUNNING"; }, std::chrono::seconds(30)));
  const int64_t queued = JobIdFrom(c.Login("alice", {"sbatch", "-o", "/dev/null", "--wrap", "true"}).out);
  ASSERT_GT(queued, 0);
  ASSERT_EQ(c.Down(false).exit_code, 0);
  ASSERT_EQ(c.Up().exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return c.JobField(queued, "JobState") == "COMPLETED"; }, std::chrono::seconds(60)))
      << c.JobField(queued, "JobState") << " " << c.JobField(running, "JobState");
  EXPECT_EQ(c.JobField(running, "Restarts"), "1");
  EXPECT_EQ(c.JobField(running, "JobState"), "PENDING") << "requeued, eligible again after Slurm's requeue delay";
}

// `up` of an existing cluster starts slurmctld once slurmdbd answers, and slurmdbd's name
// resolves from the start (Debian's slurmctld sleeps a second per failed lookup of it, once the
// bulk of a restart). With its database broken, slurmctld still starts, after at most 5 s:
// accounting never keeps the scheduler down.
TEST(ClusterIT, AnExistingClustersControllerWaitsForSlurmdbdButNotForABrokenDatabase) {
  ClusterOptions o;
  o.replicas = 1;
  TestCluster c("ag", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string controller_log = c.ClusterDir() + "/runtime/pods/" + c.name() + "-controller/log";
  auto restart = [&](int timeout_s) {
    EXPECT_EQ(c.Down(false).exit_code, 0);
    RunOptions ro;
    ro.timeout = seconds(timeout_s + 30);
    auto r = RunProcess({HPCPLANE_BIN, "--state-dir", c.state_dir(), "--cluster", c.name(), "up", "--detach",
                         "--timeout", std::to_string(timeout_s)},
                        ro);
    return r.ok() ? *r : ProcessResult{};
  };
  auto again = restart(90);
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  auto log = files::Read(controller_log).value_or("");
  EXPECT_EQ(log.find("getaddrinfo() failed"), std::string::npos) << log;
  EXPECT_NE(log.find("Registering slurmctld at port"), std::string::npos) << log;
  auto srun = c.Login("alice", {"srun", "true"});
  EXPECT_EQ(srun.exit_code, 0) << srun.out << srun.err << c.Login("root", {"sinfo", "-N", "-l"}).out
                               << files::Read(controller_log).value_or("").substr(0, 4000);

  // MariaDB cannot start on a system tablespace that is not one: slurmdbd never comes up.
  ASSERT_EQ(c.Down(false).exit_code, 0);
  ASSERT_TRUE(
      files::WriteAtomic(c.ClusterDir() + "/runtime/volumes/accounting-db/data/ibdata1", "not a tablespace").ok());
  auto broken = restart(10);
  EXPECT_NE(broken.exit_code, 0) << broken.out;
  EXPECT_TRUE(WaitFor(
      [&] {
        return c.Login("root", {"scontrol", "ping"}).out.find("is UP") != std::string::npos;
      },
      seconds(30)))
      << files::Read(controller_log).value_or("");
  auto pods = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
  ASSERT_TRUE(pods.is_array());
  int slurmdbd_pods = 0;
  for (const auto& p : pods) {
    if (p.value("name", "") != c.name() + "-slurmdbd") continue;
    ++slurmdbd_pods;
    EXPECT_FALSE(p.value("ready", true)) << "slurmdbd waits in its pod for MariaDB: " << p;
  }
  EXPECT_EQ(slurmdbd_pods, 1) << "its pod runs, so its name resolves";
}

// After kill -9 of hpcplane's daemon the pods keep running; the next `up` adopts them without
// restarting anything, and `down` after another crash removes everything.
TEST(ClusterIT, DaemonCrashIsAdoptedThenCleaned) {
  TestCluster c("cr");
  ASSERT_EQ(c.Up().exit_code, 0);
  auto pid_line = files::Read(c.ClusterDir() + "/daemon.pid");
  ASSERT_TRUE(pid_line.ok());
  pid_t daemon = std::stoi(*pid_line);
  auto before = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
  ASSERT_EQ(::kill(daemon, SIGKILL), 0);
  ASSERT_TRUE(WaitFor([&] { return hpc::ProcessStartTime(daemon) == 0; }, seconds(10)));
  // Slurm still works without the daemon.
  EXPECT_EQ(c.Login("alice", {"srun", "-N2", "true"}).exit_code, 0);

  auto again = c.Up();
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  auto after = nlohmann::json::parse(c.Cli({"get", "pods", "-o", "json"}).out, nullptr, false);
  ASSERT_EQ(before.size(), after.size());
  for (size_t i = 0; i < after.size(); ++i) {
    EXPECT_EQ(after[i]["startedAt"], before[i]["startedAt"]) << after[i]["name"];
    EXPECT_EQ(after[i]["restarts"], before[i]["restarts"]) << after[i]["name"];
  }

  pid_line = files::Read(c.ClusterDir() + "/daemon.pid");
  ASSERT_TRUE(pid_line.ok());
  ASSERT_EQ(::kill(std::stoi(*pid_line), SIGKILL), 0);
  ASSERT_EQ(c.Down(false).exit_code, 0);
  auto left = Leftovers(c);
  EXPECT_TRUE(left.empty()) << left.front();
}

// Two clusters side by side: separate subnets, bridges and Slurm clusters; stopping one leaves
// the other working.
TEST(ClusterIT, TwoClustersSideBySide) {
  TestCluster a("sa"), b("sb");
  ASSERT_EQ(a.Up().exit_code, 0);
  ASSERT_EQ(b.Up().exit_code, 0);
  EXPECT_NE(a.subnet_prefix(), b.subnet_prefix());
  auto conf_a = a.Login("root", {"scontrol", "show", "config"});
  auto conf_b = b.Login("root", {"scontrol", "show", "config"});
  EXPECT_NE(conf_a.out.find("ClusterName             = " + a.name()), std::string::npos);
  EXPECT_NE(conf_b.out.find("ClusterName             = " + b.name()), std::string::npos);
  EXPECT_EQ(a.Login("alice", {"srun", "-N2", "true"}).exit_code, 0);
  EXPECT_EQ(b.Login("alice", {"srun", "-N2", "true"}).exit_code, 0);
  ASSERT_EQ(a.Down(true).exit_code, 0);
  auto srun = b.Login("alice", {"srun", "-N2", "hostname"});
  EXPECT_EQ(srun.exit_code, 0) << srun.err;
  EXPECT_EQ(SplitLines(srun.out).size(), 2u);
}

// Invalid specs are refused with their documented message and create nothing.
TEST(ClusterIT, InvalidSpecsCreateNothing) {
  TestCluster c("iv");
  struct Case {
    std::string yaml, message;
  } cases[] = {
      {"apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: " + c.name() +
           "\n---\napiVersion: hpcplane.io/v1alpha1\nkind: NodeSet\nmetadata:\n  name: gpu\nspec:\n  minReplicas: 4\n"
           "  maxReplicas: 2\n",
       "nodeset \"gpu\": spec.maxReplicas: must be >= minReplicas (got 2 < 4)"},
      {"apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: " + c.name() +
           "\nspec:\n  colour: red\n",
       "spec.colour: unknown field (line 6)"},
      {"apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: " + c.name() + "\nspec: {network: [\n",
       "malformed YAML/JSON"},
  };
  for (const auto& tc : cases) {
    std::string path = c.state_dir() + "/bad.yaml";
    ASSERT_TRUE(files::WriteAtomic(path, tc.yaml).ok());
    auto r = c.Cli({"up", "-f", path, "--detach"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find(tc.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
    EXPECT_FALSE(files::Exists(c.ClusterDir())) << tc.message;
  }
  auto scale = c.Cli({"scale", "nodeset", "cpu", "--replicas", "2"});
  EXPECT_EQ(scale.exit_code, 1);
  EXPECT_NE(scale.err.find("not found"), std::string::npos) << scale.err;
}

}  // namespace
}  // namespace hpc::it
