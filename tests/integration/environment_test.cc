// Compute environments against real Debian suites and real Slurm releases: images built with
// mmdebstrap, clusters on 26.05, 24.11 and 22.05, MPI across workers, upgrades, a shared root.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

// The hpcplane CLI with an image store of its own (not the shared one the tests run from).
ProcessResult Hpcplane(const std::string& state_dir, const std::string& store, const std::vector<std::string>& args,
                       std::chrono::milliseconds timeout = 600s) {
  std::vector<std::string> argv = {HPCPLANE_BIN, "--state-dir", state_dir};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.timeout = timeout;
  if (!store.empty()) o.extra_env["HPCPLANE_IMAGE_STORE"] = store;
  auto r = RunProcess(argv, o);
  return r.ok() ? *r : ProcessResult{};
}

std::string EnvironmentYaml(const std::string& name, const std::vector<std::string>& packages) {
  std::string yaml = "apiVersion: hpcplane.io/v1alpha1\nkind: Environment\nmetadata:\n  name: " + name +
                     "\nspec:\n  suite: bookworm\n  purpose: workspace\n  packages: [";
  for (size_t i = 0; i < packages.size(); ++i) yaml += (i ? ", " : "") + packages[i];
  return yaml + "]\n";
}

TEST(Environments, BuiltinsAreReusedAChangedListMakesANewImageAndAMissingPackageLeavesNothing) {
  auto dir = files::MakeTempDir("hpcplane-env");
  ASSERT_TRUE(dir.ok());
  const std::string state = *dir + "/state", store = *dir + "/store";
  // The built-in environments were built once for every test (the images fixture): building
  // one again reuses it.
  auto again = Hpcplane(state, "", {"environments", "build", "slurm-26.05"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  EXPECT_NE(again.out.find("reusing slurm-26.05@sha256:"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("(Slurm 26.05."), std::string::npos) << again.out;

  ASSERT_TRUE(files::WriteAtomic(*dir + "/a.yaml", EnvironmentYaml("it-tools", {})).ok());
  auto first = Hpcplane(state, store, {"environments", "build", "-f", *dir + "/a.yaml"});
  ASSERT_EQ(first.exit_code, 0) << first.out << first.err;
  auto reused = Hpcplane(state, store, {"environments", "build", "-f", *dir + "/a.yaml"});
  ASSERT_EQ(reused.exit_code, 0) << reused.err;
  EXPECT_NE(reused.out.find("reusing"), std::string::npos) << reused.out;
  const std::string ref1 = SplitLines(first.out).back();

  ASSERT_TRUE(files::WriteAtomic(*dir + "/b.yaml", EnvironmentYaml("it-tools", {"jq"})).ok());
  auto changed = Hpcplane(state, store, {"environments", "build", "-f", *dir + "/b.yaml"});
  ASSERT_EQ(changed.exit_code, 0) << changed.out << changed.err;
  const std::string ref2 = SplitLines(changed.out).back();
  EXPECT_NE(ref1.substr(0, ref1.find(' ')), ref2.substr(0, ref2.find(' ')));
  // Nothing holds the image it replaced (no pod, no daemon): the build removed it.
  const std::string digest1 = ref1.substr(ref1.find("@sha256:") + 8, 64);
  EXPECT_FALSE(files::Exists(store + "/images/" + digest1)) << first.out;
  EXPECT_TRUE(files::ListDir(store + "/trash").empty());
  // The manifest lists every package with its version, jq among them now.
  auto describe = Hpcplane(state, store, {"environments", "describe", "it-tools"});
  ASSERT_EQ(describe.exit_code, 0) << describe.err;
  EXPECT_NE(describe.out.find("\n  jq 1."), std::string::npos) << describe.out;
  EXPECT_NE(describe.out.find("\n  slurm-client 22.05."), std::string::npos) << describe.out;

  ASSERT_TRUE(files::WriteAtomic(*dir + "/c.yaml", EnvironmentYaml("it-broken", {"hpcplane-no-such-package"})).ok());
  auto broken = Hpcplane(state, store, {"environments", "build", "-f", *dir + "/c.yaml"});
  EXPECT_NE(broken.exit_code, 0);
  EXPECT_NE(broken.err.find("hpcplane-no-such-package"), std::string::npos) << broken.err;
  EXPECT_TRUE(files::ListDir(store + "/building").empty());
  EXPECT_FALSE(files::Exists(store + "/refs/it-broken.json"));
  auto list = Hpcplane(state, store, {"environments", "list", "-o", "json"});
  auto listed = nlohmann::json::parse(list.out, nullptr, false);
  ASSERT_TRUE(listed.is_array()) << list.out;
  EXPECT_EQ(listed.size(), 1u) << list.out;
  EXPECT_EQ(Hpcplane(state, store, {"environments", "delete", "it-tools"}).exit_code, 0);
  EXPECT_TRUE(files::ListDir(store + "/images").empty());
  (void)files::RemoveAll(*dir);
}

nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(files::Read(path).value_or(""), nullptr, false);
}

std::string Blob(const std::string& layout, const std::string& digest) {
  return layout + "/blobs/sha256/" + digest.substr(digest.find(':') + 1);
}

// The environment the local pods run, packed as an OCI image, runs under a container runtime
// (runc) as the same bits; packing it again changes nothing.
TEST(Environments, AnEnvironmentExportedAsAnOciImageRunsUnderAContainerRuntime) {
  auto dir = files::MakeTempDir("hpcplane-oci");
  ASSERT_TRUE(dir.ok());
  const std::string state = *dir + "/state", layout = *dir + "/layout";
  auto exported = Hpcplane(state, "", {"environments", "export", "slurm-26.05", "--oci-layout", layout});
  ASSERT_EQ(exported.exit_code, 0) << exported.out << exported.err;
  EXPECT_NE(exported.out.find(layout + ":slurm-26.05 sha256:"), std::string::npos) << exported.out;
  auto again = Hpcplane(state, "", {"environments", "export", "slurm-26.05", "--oci-layout", layout});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("(unchanged)"), std::string::npos) << again.out;

  // The layout names the tag; the image's labels carry the store's digest and the Slurm release.
  auto index = ReadJson(layout + "/index.json");
  ASSERT_TRUE(index.is_object()) << files::Read(layout + "/index.json").value_or("");
  ASSERT_EQ(index["manifests"].size(), 1u) << index.dump();
  EXPECT_EQ(index["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"], "slurm-26.05");
  auto manifest = ReadJson(Blob(layout, index["manifests"][0]["digest"]));
  ASSERT_TRUE(manifest.is_object());
  EXPECT_EQ(manifest["layers"].size(), 1u);
  auto config = ReadJson(Blob(layout, manifest["config"]["digest"]));
  ASSERT_TRUE(config.is_object());
  const auto& labels = config["config"]["Labels"];
  EXPECT_EQ(labels.value("hpcplane.io/slurm", "").rfind("26.05.", 0), 0u) << labels.dump();
  auto list = nlohmann::json::parse(Hpcplane(state, "", {"environments", "list", "-o", "json"}).out, nullptr, false);
  std::string reference;
  for (const auto& e : list) {
    if (e.value("name", "") == "slurm-26.05") reference = e.value("image", "");
  }
  EXPECT_EQ("slurm-26.05@sha256:" + labels.value("hpcplane.io/image-digest", ""), reference);

  // Unpacked into a runtime bundle and run by runc.
  const std::string bundle = *dir + "/bundle";
  RunOptions slow;
  slow.timeout = 300s;
  auto unpack = RunProcess({"umoci", "unpack", "--image", layout + ":slurm-26.05", bundle}, slow);
  ASSERT_TRUE(unpack.ok() && unpack->ok()) << (unpack.ok() ? unpack->err : unpack.status().message());
  auto spec = ReadJson(bundle + "/config.json");
  ASSERT_TRUE(spec.is_object());
  spec["process"]["terminal"] = false;
  spec["process"]["args"] = {
      "sh", "-c", "slurmctld -V && mpirun --version && mpirun.openmpi --version && python3 -c 'import mpi4py'"};
  ASSERT_TRUE(files::WriteAtomic(bundle + "/config.json", spec.dump()).ok());
  auto run = RunProcess({"runc", "run", "--bundle", bundle, "hpcplane-it-oci-" + std::to_string(::getpid())}, slow);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->exit_code, 0) << run->out << run->err;
  EXPECT_NE(run->out.find("slurm-wlm 26.05."), std::string::npos) << run->out << run->err;
  // 26.05: MPICH's launcher is the default mpirun, Open MPI's is beside it (environments.cc).
  EXPECT_NE(run->out.find("HYDRA build details"), std::string::npos) << run->out;
  EXPECT_NE(run->out.find("Open MPI"), std::string::npos) << run->out;
  (void)files::RemoveAll(*dir);
}

// mpi4py (Debian's links Open MPI) under Open MPI's own launcher in a batch job. On 26.05 `mpirun`
// names MPICH's (the MPI srun starts), so Open MPI's is asked for by name.
TEST(Environments, AnMpiHelloPrintsEveryRankOnceAcrossTwoWorkers) {
  TestCluster c("mpi");
  ASSERT_EQ(c.Up().exit_code, 0);
  auto run = c.Login("alice",
                     {"sbatch", "-N2", "--ntasks-per-node=1", "--wait", "-o", "/shared/mpi.out", "--wrap",
                      "mpirun.openmpi python3 -m mpi4py.bench helloworld"},
                     120s);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err << files::Read(c.SharedVolume() + "/mpi.out").value_or("");
  const std::string out = files::Read(c.SharedVolume() + "/mpi.out").value_or("");
  std::vector<std::string> hellos;
  for (const auto& line : SplitLines(out)) {
    if (line.rfind("Hello, World!", 0) == 0) hellos.push_back(line);
  }
  ASSERT_EQ(hellos.size(), 2u) << out;
  std::sort(hellos.begin(), hellos.end());
  EXPECT_NE(hellos[0].find("process 0 of 2 on cpu-"), std::string::npos) << out;
  EXPECT_NE(hellos[1].find("process 1 of 2 on cpu-"), std::string::npos) << out;
  EXPECT_NE(hellos[0].substr(hellos[0].rfind(' ')), hellos[1].substr(hellos[1].rfind(' '))) << "two workers: " << out;
}

// A practitioner's workspace runs its workspace environment: mpicc there builds a program that
// the cluster's workers (its nodeset, scaled from zero) run as two MPI ranks. An environment of
// another Slurm release is refused before anything is made.
TEST(Environments, AWorkspaceRunsItsEnvironmentAndBuildsAnMpiProgramForTheWorkers) {
  TestCluster c("wsenv");
  ASSERT_EQ(c.Up().exit_code, 0);
  ASSERT_EQ(c.Cli({"users", "add", "ann"}).exit_code, 0);
  auto other = c.Cli({"workspace", "launch", "--user", "ann", "--project", "astro", "--environment", "slurm-22.05"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("environment \"slurm-22.05\" carries Slurm 22.05, the cluster's \"slurm-26.05\" Slurm "
                           "26.05"),
            std::string::npos)
      << other.err;
  EXPECT_FALSE(files::Exists(c.ClusterDir() + "/workspaces/ann-astro.json"));
  // Two-CPU workers (tier "medium"): the MPI job below runs two ranks on each.
  auto ws = c.Cli({"workspace", "launch", "--user", "ann", "--project", "astro", "--tier", "medium", "--max-workers",
                   "2", "--idle-timeout", "5s", "--environment", "workspace-26.05"},
                  600s);
  ASSERT_EQ(ws.exit_code, 0) << ws.out << ws.err;
  // The cluster's image has no compiler (nor git): the workspace environment builds the program.
  auto cc = c.Cli({"workspace", "exec", "ann-astro", "--", "sh", "-c",
                   "printf '%s\n' '#include <mpi.h>' '#include <stdio.h>' '#include <unistd.h>' "
                   "'int main(int c, char** v) { int r, n; char h[64]; MPI_Init(&c, &v); "
                   "MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &n); gethostname(h, 64); "
                   "printf(\"rank %d of %d on %s\\n\", r, n, h); MPI_Finalize(); return 0; }' > hello.c && "
                   "mpicc -o hello hello.c && git --version && python3 -c 'import numpy; print(numpy.__name__)'"},
                  120s);
  ASSERT_EQ(cc.exit_code, 0) << cc.out << cc.err;
  EXPECT_NE(cc.out.find("git version"), std::string::npos) << cc.out;
  EXPECT_NE(cc.out.find("numpy"), std::string::npos) << cc.out;
  // srun starts the four ranks itself (MpiDefault=pmi2 and MPICH on 26.05): no mpirun. Two on
  // each worker, so ranks meet both within a pod and across the pods' network. Per node: from
  // zero, Slurm knows no worker's size and would spread `-n4` as one CPU a node, over 4 nodes.
  auto run = c.Cli({"workspace", "exec", "ann-astro", "--", "srun", "-N2", "--ntasks-per-node=2", "./hello"}, 180s);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  std::vector<std::string> ranks;
  for (const auto& line : SplitLines(run.out)) {
    if (line.rfind("rank ", 0) == 0) ranks.push_back(line);
  }
  ASSERT_EQ(ranks.size(), 4u) << run.out << run.err;
  std::sort(ranks.begin(), ranks.end());
  std::set<std::string> hosts;
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(ranks[r].rfind("rank " + std::to_string(r) + " of 4 on ", 0), 0u) << run.out;
    hosts.insert(ranks[r].substr(ranks[r].rfind(' ') + 1));
  }
  EXPECT_EQ(hosts.size(), 2u) << "two workers: " << run.out;
  // In use, the environment cannot be deleted.
  auto del = c.Cli({"environments", "delete", "workspace-26.05"});
  EXPECT_NE(del.exit_code, 0);
  EXPECT_NE(del.err.find("in use by workspace \"ann-astro\""), std::string::npos) << del.err;
}

// Bring-up, srun across two workers, autoscaling from zero, a workspace and sacct on the older
// releases that clusters may still run. 24.11 refuses at submission a job needing more nodes than
// its partition holds, so there the nodeset keeps the two workers the job needs (minReplicas).
class OlderRelease : public ::testing::TestWithParam<std::string> {};

TEST_P(OlderRelease, BringsUpRunsAcrossWorkersScalesFromZeroAndAccounts) {
  const std::string env = GetParam();
  ClusterOptions o;
  o.replicas = -1;
  o.extra_cluster_spec = "  environment: " + env + "\n";
  const bool from_zero = env != "slurm-24.11";
  o.extra_nodeset_spec = std::string("  idleTimeout: 5s\n") + (from_zero ? "" : "  minReplicas: 2\n");
  TestCluster c("old", o);
  auto up = c.Up();
  ASSERT_EQ(up.exit_code, 0) << up.out << up.err;
  const std::string series = env.substr(env.find('-') + 1);
  auto version = c.Login("alice", {"sinfo", "-V"});
  EXPECT_NE(version.out.find("slurm-wlm " + series + "."), std::string::npos) << version.out;
  EXPECT_NE(c.Cli({"status"}).out.find("slurm/slurmctld    " + series + "."), std::string::npos);
  // The job's two nodes (both, or the second) are started for it.
  auto run = c.Login("alice", {"srun", "-N2", "--comment", "old-release", "hostname"}, 120s);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(SplitLines(Trim(run.out)).size(), 2u) << run.out;
  // Debian's 22.05 and 24.11 have mpi/pmix, the cluster's MpiDefault: srun starts Open MPI's ranks
  // itself, no mpirun, no --mpi. Two on each one-CPU worker (--overcommit; the workers run here).
  auto mpi =
      c.Login("alice", {"srun", "-N2", "-n4", "--overcommit", "python3", "-m", "mpi4py.bench", "helloworld"}, 120s);
  ASSERT_EQ(mpi.exit_code, 0) << mpi.out << mpi.err;
  std::set<std::string> hosts;
  for (int r = 0; r < 4; ++r) {
    const std::string hello = "I am process " + std::to_string(r) + " of 4 on ";
    const size_t at = mpi.out.find(hello);
    ASSERT_NE(at, std::string::npos) << mpi.out;
    const size_t host = at + hello.size();
    hosts.insert(mpi.out.substr(host, mpi.out.find('.', host) - host));
  }
  EXPECT_EQ(hosts.size(), 2u) << "two workers: " << mpi.out;
  // Open MPI's own launcher still starts its daemons through srun under MpiDefault=pmix.
  auto launched = c.Login("alice",
                          {"sbatch", "-N2", "--ntasks-per-node=1", "--wait", "-o", "/shared/mpirun.out", "--wrap",
                           "mpirun.openmpi python3 -m mpi4py.bench helloworld"},
                          120s);
  const std::string launched_out = files::Read(c.SharedVolume() + "/mpirun.out").value_or("");
  ASSERT_EQ(launched.exit_code, 0) << launched.err << launched_out;
  EXPECT_NE(launched_out.find("I am process 1 of 2 on "), std::string::npos) << launched_out;
  const std::string floor = from_zero ? "0" : "2";
  EXPECT_TRUE(WaitFor([&] { return c.NodeSetStatusField("replicas") == floor; }, 90s)) << "back to " << floor;
  EXPECT_TRUE(WaitFor(
      [&] {
        auto r = c.Login("alice", {"sacct", "-n", "-X", "-P", "--format=Comment,State"});
        return r.out.find("old-release|COMPLETED") != std::string::npos;
      },
      60s));
  ASSERT_EQ(c.Cli({"users", "add", "ann"}).exit_code, 0);
  auto ws = c.Cli({"workspace", "launch", "--user", "ann", "--project", "astro", "--tier", "small", "--max-workers",
                   "1", "--idle-timeout", "5s"},
                  120s);
  ASSERT_EQ(ws.exit_code, 0) << ws.out << ws.err;
  auto job =
      c.Cli({"workspace", "exec", "ann-astro", "--", "sbatch", "--wait", "-o", "/dev/null", "--wrap", "true"}, 120s);
  if (from_zero) {
    EXPECT_EQ(job.exit_code, 0) << job.out << job.err;
  } else {
    // The workspace's nodeset is at zero: 24.11 refuses the job (docs/user-guide.md, Compute environments).
    EXPECT_NE(job.exit_code, 0);
    EXPECT_NE(job.err.find("Requested node configuration is not available"), std::string::npos) << job.err;
  }
}

INSTANTIATE_TEST_SUITE_P(Releases, OlderRelease, ::testing::Values("slurm-24.11", "slurm-22.05"),
                         [](const auto& info) { return info.param == "slurm-24.11" ? "Slurm2411" : "Slurm2205"; });

TEST(Environments, AnUnsupportedUpgradeIsRefusedWithNothingChanged) {
  ClusterOptions o;
  o.extra_cluster_spec = "  environment: slurm-22.05\n";
  TestCluster c("upno", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string spec_before = files::Read(c.ClusterDir() + "/cluster.json").value_or("");
  auto refused = c.Cli({"upgrade", "slurm-26.05"});
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("upgrades only from the three previous releases"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("22.05"), std::string::npos) << refused.err;
  auto spec_after = nlohmann::json::parse(files::Read(c.ClusterDir() + "/cluster.json").value_or(""), nullptr, false);
  EXPECT_EQ(spec_after["spec"].value("environment", ""), "slurm-22.05");
  // Still up, on the same release, and it runs jobs.
  EXPECT_NE(c.Login("alice", {"sinfo", "-V"}).out.find("slurm-wlm 22.05."), std::string::npos);
  EXPECT_EQ(c.Login("alice", {"srun", "-N2", "true"}).exit_code, 0);
  // apply cannot change the release behind the upgrade's checks either.
  auto text = files::Read(c.manifest_path()).value_or("");
  text.replace(text.find("slurm-22.05"), 11, "slurm-26.05");
  ASSERT_TRUE(files::WriteAtomic(c.state_dir() + "/changed.yaml", text).ok());
  auto apply = c.Cli({"apply", "-f", c.state_dir() + "/changed.yaml"});
  EXPECT_NE(apply.exit_code, 0);
  EXPECT_NE(apply.err.find("hpcplane upgrade"), std::string::npos) << apply.err;
  (void)spec_before;
}

// A rolling upgrade, 24.11 -> 26.05, while a job runs on a 24.11 worker: the job completes where
// it runs, new jobs run on 26.05 workers meanwhile, the old workers go once idle, and the queue
// and the history stay.
TEST(Environments, ARollingUpgradeKillsNoJobAndKeepsTheQueueAndTheHistory) {
  ClusterOptions o;
  o.extra_cluster_spec = "  environment: slurm-24.11\n";
  TestCluster c("upok", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  ASSERT_EQ(c.Login("alice", {"srun", "--comment", "before-upgrade", "true"}).exit_code, 0);
  ASSERT_TRUE(WaitFor(
      [&] {
        return c.Login("alice", {"sacct", "-n", "-X", "-P", "--format=Comment,State"})
                   .out.find("before-upgrade|COMPLETED") != std::string::npos;
      },
      60s));
  // Runs through the upgrade on a 24.11 worker, until the test lets it end.
  auto running = c.Login("alice", {"sbatch", "--parsable", "-o", "/dev/null", "--comment", "through-upgrade", "--wrap",
                                   "until [ -e /shared/up-release ]; do sleep 0.2; done"});
  const int64_t through = std::atoll(Trim(running.out).c_str());
  ASSERT_GT(through, 0) << running.err;
  ASSERT_TRUE(WaitFor([&] { return c.JobField(through, "JobState") == "RUNNING"; }, 60s));
  auto held = c.Login("alice", {"sbatch", "--parsable", "--hold", "-o", "/dev/null", "--wrap", "true"});
  const int64_t queued = std::atoll(Trim(held.out).c_str());
  ASSERT_GT(queued, 0) << held.err;

  auto upgrade = c.Cli({"upgrade", "slurm-26.05", "--timeout", "180"}, 300s);
  ASSERT_EQ(upgrade.exit_code, 0) << upgrade.out << upgrade.err;
  EXPECT_NE(upgrade.out.find("Rolling upgrade"), std::string::npos) << upgrade.out;
  EXPECT_NE(upgrade.out.find("runs Slurm 26.05."), std::string::npos) << upgrade.out;
  EXPECT_NE(c.Login("alice", {"sinfo", "-V"}).out.find("slurm-wlm 26.05."), std::string::npos);
  // The job still runs on its 24.11 worker, which Slurm holds drained for the upgrade.
  EXPECT_EQ(c.JobField(through, "JobState"), "RUNNING");
  const std::string old_node = c.JobField(through, "NodeList");
  auto node = c.Login("root", {"scontrol", "show", "node", old_node});
  EXPECT_NE(node.out.find("DRAIN"), std::string::npos) << node.out;
  EXPECT_NE(node.out.find("hpcplane: upgrade"), std::string::npos) << node.out;
  // Its slurmd, still 24.11, registers with the new slurmctld (seconds after it started).
  EXPECT_TRUE(WaitFor(
      [&] {
        return Trim(c.Login("root", {"sinfo", "-h", "-n", old_node, "-o", "%v"}).out).rfind("24.11.", 0) == 0;
      },
      30s))
      << c.Login("root", {"sinfo", "-h", "-n", old_node, "-o", "%v"}).out;
  // Meanwhile a new job runs on a worker of the new release.
  auto fresh = c.Login("alice", {"srun", "-N1", "slurmd", "-V"}, 120s);
  EXPECT_EQ(fresh.exit_code, 0) << fresh.out << fresh.err;
  EXPECT_NE(fresh.out.find(" 26.05."), std::string::npos) << fresh.out;

  // Let go, the job ends as it would have: completed, exit 0, recorded.
  ASSERT_TRUE(files::WriteInPlace(c.SharedVolume() + "/up-release", "").ok());
  ASSERT_TRUE(WaitFor([&] { return c.JobField(through, "JobState") == "COMPLETED"; }, 120s))
      << c.JobField(through, "JobState");
  EXPECT_TRUE(WaitFor(
      [&] {
        return c.Login("alice", {"sacct", "-n", "-X", "-P", "--format=Comment,State,ExitCode"})
                   .out.find("through-upgrade|COMPLETED|0:0") != std::string::npos;
      },
      60s));
  // Then its worker goes, and only 26.05 workers remain.
  EXPECT_TRUE(WaitFor([&] { return c.NodeSetStatusField("outdated") == "0"; }, 60s))
      << c.NodeSetStatusField("outdated");
  EXPECT_TRUE(WaitFor(
      [&] {
        auto nodes = c.Login("root", {"sinfo", "-h", "-N", "-o", "%N %v"}).out;
        return !nodes.empty() && nodes.find("24.11") == std::string::npos &&
               nodes.find(old_node + " ") == std::string::npos;
      },
      60s))
      << c.Login("root", {"sinfo", "-h", "-N", "-o", "%N %v"}).out;
  // The history is still there, and the held job still waits; released, it runs.
  EXPECT_NE(
      c.Login("alice", {"sacct", "-n", "-X", "-P", "--format=Comment,State"}).out.find("before-upgrade|COMPLETED"),
      std::string::npos);
  EXPECT_EQ(c.JobField(queued, "JobState"), "PENDING");
  ASSERT_EQ(c.Login("alice", {"scontrol", "release", std::to_string(queued)}).exit_code, 0);
  EXPECT_TRUE(WaitFor([&] { return c.JobField(queued, "JobState") == "COMPLETED"; }, 90s))
      << c.JobField(queued, "JobState");
  // slurm.conf is 26.05's once no 24.11 daemon is left.
  EXPECT_TRUE(WaitFor(
      [&] {
        return c.Login("root", {"scontrol", "show", "config"}).out.find("metrics/openmetrics") != std::string::npos;
      },
      60s));
}

// Soperator's "jail": what the admin installs in the login pod, a worker started before the
// install runs; workers cannot change it.
TEST(Environments, ASharedRootCarriesAnInstallFromTheLoginPodToRunningWorkers) {
  ClusterOptions o;
  o.extra_cluster_spec = "  sharedRoot:\n    enabled: true\n";
  TestCluster c("jail", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  ASSERT_EQ(c.Login("alice", {"srun", "-N2", "true"}).exit_code, 0);  // both workers run
  // A package of our own, built and installed with dpkg in the login pod, as root.
  const std::string build =
      "set -e; d=$(mktemp -d); mkdir -p $d/DEBIAN $d/usr/bin; "
      "printf 'Package: hpcplane-hello\\nVersion: 1.0\\nArchitecture: all\\nMaintainer: it <it@localhost>\\n"
      "Description: test\\n' > $d/DEBIAN/control; "
      "printf '#!/bin/sh\\necho hello from $(hostname)\\n' > $d/usr/bin/hpcplane-hello; chmod 755 "
      "$d/usr/bin/hpcplane-hello; "
      "dpkg-deb --build $d /tmp/hello.deb >/dev/null; dpkg -i /tmp/hello.deb >/dev/null";
  auto install = c.Cli({"exec", c.name() + "-login", "--", "bash", "-c", build});
  ASSERT_EQ(install.exit_code, 0) << install.out << install.err;
  auto run = c.Login("alice", {"srun", "-N2", "hpcplane-hello"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("hello from cpu-0"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("hello from cpu-1"), std::string::npos) << run.out;
  auto listed = c.Cli({"exec", "cpu-0", "--", "dpkg", "-s", "hpcplane-hello"});
  EXPECT_EQ(listed.exit_code, 0) << listed.err;
  auto write = c.Cli({"exec", "cpu-0", "--", "touch", "/usr/bin/from-a-worker"});
  EXPECT_NE(write.exit_code, 0);
  EXPECT_NE(write.err.find("Read-only file system"), std::string::npos) << write.err;
}

}  // namespace
}  // namespace hpc::it
