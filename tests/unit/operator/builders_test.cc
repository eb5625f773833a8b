#include "operator/builders.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "common/files.h"
#include "common/subprocess.h"
#include "slurm/config.h"
#include "slurm/health_check.h"

namespace hpc::op {
namespace {

api::SlurmCluster Cluster() {
  api::SlurmCluster c;
  c.metadata.name = "c1";
  c.spec.datasets = {{"shared", "/shared", ""}, {"ref", "/ref", "/srv/ref"}};
  c.spec.users = {{"alice", 2001, 2001, false, ""}};
  return c;
}

BuildInputs Inputs() {
  BuildInputs in;
  in.slurm = {64030, 64030};
  in.munge = {102, 105};
  in.nobody = {65534, 65534};
  in.host_passwd = "root:x:0:0:root:/root:/bin/bash";
  in.host_group = "root:x:0:";
  return in;
}

const runtime::Mount* FindMount(const runtime::PodSpec& p, const std::string& path) {
  for (const auto& m : p.mounts) {
    if (m.mount_path == path) return &m;
  }
  return nullptr;
}

// Every daemon that can hang while its port still accepts connections is watched by a probe
// that needs an answer, so a hung daemon is restarted, not only a dead one.
TEST(BuildersTest, EveryDaemonHasALivenessProbeThatNeedsAnAnswer) {
  auto c = Cluster();
  auto in = Inputs();
  for (const auto& pod : {BuildMungePod(c, in), BuildControllerPod(c, in), BuildRestApiPod(c, in),
                          BuildMariaDbPod(c, in), BuildSlurmdbdPod(c, in)}) {
    EXPECT_TRUE(pod.liveness.Set()) << pod.name;
    EXPECT_TRUE(pod.liveness.http_port > 0 || !pod.liveness.command.empty()) << pod.name;
  }
  // slurmdbd's probe asks slurmdbd through sacctmgr, which needs slurm.conf in the pod.
  auto dbd = BuildSlurmdbdPod(c, in);
  EXPECT_NE(std::find(dbd.liveness.command.begin(), dbd.liveness.command.end(), "sacctmgr"),
            dbd.liveness.command.end());
  ASSERT_NE(FindMount(dbd, "/etc/slurm"), nullptr);
}

// MariaDB's start script, run for real with stand-ins for mariadb-install-db and mariadbd (the
// volume's path moved into a temp dir): the data lives in a directory of the volume, so what a
// file system keeps at its root (ext4's lost+found, root's own) is never touched or taken for a
// database; it is initialised once; a volume an earlier version initialised at its root keeps
// its data there.
TEST(BuildersTest, MariaDbKeepsItsDataInADirectoryOfTheVolume) {
  auto dir = files::MakeTempDir("hpcplane-mariadb-test");
  ASSERT_TRUE(dir.ok());
  const std::string volume = *dir + "/volume", bin = *dir + "/bin";
  ASSERT_TRUE(files::MakeDirs(volume + "/lost+found", 0700).ok());
  ASSERT_TRUE(files::WriteAtomic(volume + "/lost+found/fsck-found", "x").ok());
  ASSERT_TRUE(files::MakeDirs(bin, 0755).ok());
  // Each stand-in records how it was called, the data directory it was given among them.
  for (const char* tool : {"mariadb-install-db", "mariadbd"}) {
    ASSERT_TRUE(files::WriteAtomic(bin + "/" + tool,
                                   std::string("#!/bin/sh\necho \"") + tool + " $*\" >> " + *dir + "/calls\n", 0755)
                    .ok());
  }
  std::string script = BuildMariaDbPod(Cluster(), Inputs()).command.at(2);
  for (size_t at; (at = script.find("/var/lib/mysql")) != std::string::npos;) script.replace(at, 14, volume);
  auto start = [&] {
    RunOptions o;
    o.extra_env = {{"PATH", bin + ":/usr/bin:/bin"}};
    auto r = RunProcess({"/bin/sh", "-ec", script}, o);
    return r.ok() && r->ok();
  };
  auto calls = [&] { return files::Read(*dir + "/calls").value_or(""); };

  ASSERT_TRUE(start());
  EXPECT_TRUE(files::Exists(volume + "/lost+found/fsck-found")) << "the file system's own is left alone";
  EXPECT_TRUE(files::Exists(volume + "/data/.hpcplane-initialized"));
  EXPECT_NE(calls().find("mariadb-install-db --no-defaults --datadir=" + volume + "/data "), std::string::npos)
      << calls();
  EXPECT_NE(calls().find("mariadbd --no-defaults --datadir=" + volume + "/data "), std::string::npos) << calls();
  ASSERT_TRUE(files::WriteAtomic(*dir + "/calls", "").ok());
  ASSERT_TRUE(start());
  EXPECT_EQ(calls().find("mariadb-install-db"), std::string::npos) << "initialised once: " << calls();

  // A volume initialised at its root (before the data directory): served from there, as it is.
  ASSERT_TRUE(files::RemoveAll(volume + "/data").ok());
  ASSERT_TRUE(files::WriteAtomic(volume + "/.hpcplane-initialized", "").ok());
  ASSERT_TRUE(files::WriteAtomic(*dir + "/calls", "").ok());
  ASSERT_TRUE(start());
  EXPECT_EQ(calls().find("mariadb-install-db"), std::string::npos) << calls();
  EXPECT_NE(calls().find("mariadbd --no-defaults --datadir=" + volume + " "), std::string::npos) << calls();
  EXPECT_FALSE(files::Exists(volume + "/data"));
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

// A worker pod asks for the nodeset's shape (what slurmd advertises), so a runtime that places
// pods (Kubernetes) puts it where that shape is free; GPUs are limits too.
TEST(BuildersTest, MungeSidecarServesThePodsOwnSocketWithTheSharedKey) {
  api::NodeSet ns;
  ns.metadata.name = "cpu";
  BuildInputs in = Inputs();
  const runtime::PodSpec shared = BuildWorkerPod(Cluster(), ns, 0, in);
  EXPECT_TRUE(shared.sidecars.empty());
  const runtime::Mount* socket = FindMount(shared, slurm::kMungeSocketDir);
  ASSERT_NE(socket, nullptr);
  EXPECT_EQ(socket->source, runtime::MountSource::kVolume) << "locally every pod uses the munge pod's socket";

  in.auth_sidecars = true;
  for (const runtime::PodSpec& p : {BuildWorkerPod(Cluster(), ns, 0, in), BuildControllerPod(Cluster(), in),
                                    BuildSlurmdbdPod(Cluster(), in), BuildLoginPod(Cluster(), in)}) {
    socket = FindMount(p, slurm::kMungeSocketDir);
    ASSERT_NE(socket, nullptr) << p.name;
    EXPECT_EQ(socket->source, runtime::MountSource::kEmptyDir) << p.name;
    ASSERT_EQ(p.sidecars.size(), 1u) << p.name;
    const runtime::Sidecar& munged = p.sidecars[0];
    EXPECT_EQ(munged.command, BuildMungePod(Cluster(), in).command) << "the same daemon as the munge pod";
    EXPECT_EQ(munged.uid, in.munge.uid);
    EXPECT_FALSE(munged.readiness.command.empty()) << "Slurm starts only once munged answers";
    auto has = [&](const std::string& path, runtime::MountSource source) {
      return std::any_of(munged.mounts.begin(), munged.mounts.end(),
                         [&](const runtime::Mount& m) { return m.mount_path == path && m.source == source; });
    };
    EXPECT_TRUE(has(slurm::kMungeSocketDir, runtime::MountSource::kEmptyDir)) << "the same directory as the pod's";
    EXPECT_TRUE(has("/run/secrets/munge", runtime::MountSource::kSecret));
  }
}

// From 23.11 on Slurm authenticates itself: its daemons hold the cluster's key (0600, SlurmUser)
// and serve their own clients; the pods of clients reach sackd's socket where Slurm's clients
// look first (/run/slurm). No munge anywhere.
TEST(BuildersTest, AuthSlurmDaemonsHoldTheKeyAndClientsReachSackd) {
  api::NodeSet ns;
  ns.metadata.name = "cpu";
  api::Workspace w;
  w.metadata.name = "ws";
  w.spec.user = {"alice", 2001, 2001, false, ""};
  BuildInputs in = Inputs();
  in.release = {26, 5, 5};
  ASSERT_FALSE(UsesMunge(in));
  const auto c = Cluster();
  for (bool sidecars : {false, true}) {
    in.auth_sidecars = sidecars;
    for (const runtime::PodSpec& p :
         {BuildControllerPod(c, in), BuildWorkerPod(c, ns, 0, in), BuildSlurmdbdPod(c, in)}) {
      const runtime::Mount* key = FindMount(p, slurm::kSlurmKeyDir);
      ASSERT_NE(key, nullptr) << p.name;
      EXPECT_EQ(key->source, runtime::MountSource::kSecret);
      EXPECT_EQ(key->name, kSecretSlurmKey);
      EXPECT_EQ(p.env.at("SLURM_SACK_KEY"), slurm::kSlurmKeyPath) << p.name;
      EXPECT_EQ(FindMount(p, slurm::kMungeSocketDir), nullptr) << p.name;
      EXPECT_EQ(FindMount(p, slurm::kSackSocketDir), nullptr) << p.name << ": the daemon serves its own socket";
      EXPECT_TRUE(p.sidecars.empty()) << p.name;
    }
    // slurmdbd runs as SlurmUser, which cannot create /run/slurmdbd for its socket.
    EXPECT_NE(FindMount(BuildSlurmdbdPod(c, in), slurm::kSlurmdbdRunDir), nullptr);
    for (const runtime::PodSpec& p : {BuildLoginPod(c, in), BuildRestApiPod(c, in), BuildWorkspaceLoginPod(c, w, in)}) {
      EXPECT_EQ(FindMount(p, slurm::kSlurmKeyDir), nullptr) << p.name << ": a client never holds the key";
      EXPECT_EQ(FindMount(p, slurm::kMungeSocketDir), nullptr) << p.name;
      const runtime::Mount* socket = FindMount(p, slurm::kSackSocketDir);
      ASSERT_NE(socket, nullptr) << p.name;
      EXPECT_EQ(socket->name, kVolumeSackSocket);
      if (!sidecars) {
        EXPECT_EQ(socket->source, runtime::MountSource::kVolume) << "locally every client uses the sackd pod's";
        EXPECT_TRUE(p.sidecars.empty());
        continue;
      }
      EXPECT_EQ(socket->source, runtime::MountSource::kEmptyDir) << p.name;
      ASSERT_EQ(p.sidecars.size(), 1u) << p.name;
      const runtime::Sidecar& sackd = p.sidecars[0];
      EXPECT_EQ(sackd.name, "sackd");
      EXPECT_EQ(sackd.uid, in.slurm.uid) << "sackd runs as SlurmUser";
      EXPECT_EQ(sackd.command, BuildSackdPod(c, in).command) << "the same daemon as the sackd pod";
      EXPECT_FALSE(sackd.readiness.command.empty()) << "clients start once sackd serves";
    }
  }
  in.auth_sidecars = false;  // the sackd pod is the local runtime's
  const runtime::PodSpec sackd = BuildSackdPod(c, in);
  EXPECT_EQ(sackd.uid, in.slurm.uid);
  ASSERT_NE(FindMount(sackd, slurm::kSlurmKeyDir), nullptr);
  ASSERT_NE(FindMount(sackd, slurm::kSackSocketDir), nullptr);
  EXPECT_EQ(FindMount(sackd, slurm::kSackSocketDir)->source, runtime::MountSource::kVolume);
}

// Configless workers (23.11 on): slurmd fetches slurm.conf from slurmctld and takes every
// reconfigure from it, so no worker mounts the config map a kubelet would refresh late; 22.05's
// workers read it.
TEST(BuildersTest, WorkersFetchTheirConfigurationFromSlurmctldFrom2311) {
  api::NodeSet ns;
  ns.metadata.name = "cpu";
  BuildInputs in = Inputs();
  in.release = {26, 5, 5};
  const runtime::PodSpec modern = BuildWorkerPod(Cluster(), ns, 0, in);
  auto server = std::find(modern.command.begin(), modern.command.end(), "--conf-server");
  ASSERT_NE(server, modern.command.end());
  ASSERT_NE(server + 1, modern.command.end());
  EXPECT_EQ(*(server + 1), "c1-controller:6817");
  EXPECT_EQ(FindMount(modern, slurm::kConfigDir), nullptr);
  EXPECT_NE(FindMount(modern, slurm::kScriptsDir), nullptr) << "TaskProlog and the health check keep theirs";
  EXPECT_NE(FindMount(modern, slurm::kHealthConfigDir), nullptr);

  in.release = {22, 5, 8};
  const runtime::PodSpec old = BuildWorkerPod(Cluster(), ns, 0, in);
  EXPECT_EQ(std::find(old.command.begin(), old.command.end(), "--conf-server"), old.command.end());
  EXPECT_NE(FindMount(old, slurm::kConfigDir), nullptr);
}

// The backup controller is the primary's pod under its own name: the same state volume and
// command, labelled a controller (every flow to slurmctld is its too), ready once it listens,
// no liveness probe (standing by it serves no HTTP), reading the mounted configuration, and on
// Kubernetes preferably on another machine. Configless workers may fetch from either.
TEST(BuildersTest, TheBackupControllerSharesThePrimarysStateAndWorkersKnowBoth) {
  BuildInputs in = Inputs();
  in.release = {26, 5, 5};
  in.controller_config_pushed = true;
  api::SlurmCluster c = Cluster();
  c.spec.backup_controller = true;
  const runtime::PodSpec primary = BuildControllerPod(c, in), backup = BuildBackupControllerPod(c, in);
  EXPECT_EQ(backup.name, "c1-controller-backup");
  EXPECT_EQ(backup.labels.at(kLabelComponent), "controller");
  EXPECT_EQ(backup.labels.at(kLabelControllerRole), "backup");
  EXPECT_EQ(primary.labels.count(kLabelControllerRole), 0u);
  const runtime::Mount* state = FindMount(backup, slurm::kStateSaveDir);
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->name, FindMount(primary, slurm::kStateSaveDir)->name) << "one state, two controllers";
  BuildInputs mounted = in;
  mounted.controller_config_pushed = false;
  EXPECT_EQ(backup.command, BuildControllerPod(c, mounted).command) << "the same slurmctld, on the mounted file";
  EXPECT_EQ(backup.readiness.tcp_port, slurm::kSlurmctldPort);
  EXPECT_EQ(backup.readiness.http_path, "");
  EXPECT_EQ(primary.readiness.http_path, "/readyz");
  EXPECT_FALSE(backup.liveness.Set());
  EXPECT_TRUE(primary.liveness.Set());
  EXPECT_EQ(backup.env.count("SLURM_CONF"), 0u) << "the operator writes its copy into the primary only";
  EXPECT_EQ(primary.env.count("SLURM_CONF"), 1u);
  EXPECT_EQ(backup.placement.affinity["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"][0]
                                     ["podAffinityTerm"]["labelSelector"]["matchLabels"][kLabelComponent],
            "controller");

  api::NodeSet ns;
  ns.metadata.name = "cpu";
  const runtime::PodSpec worker = BuildWorkerPod(c, ns, 0, in);
  auto server = std::find(worker.command.begin(), worker.command.end(), "--conf-server");
  ASSERT_NE(server, worker.command.end());
  EXPECT_EQ(*(server + 1), "c1-controller:6817,c1-controller-backup:6817");
}

// Kubernetes, configless clusters: slurmctld reads the operator's copy of its configuration,
// made from the mount at its start unless the operator wrote it already; munge clusters (whose
// workers read their own file) read the mount.
TEST(BuildersTest, APushedControllerConfigIsCopiedFromTheMountAtStartUnlessThere) {
  BuildInputs in = Inputs();
  in.release = {26, 5, 5};
  in.controller_config_pushed = true;
  const runtime::PodSpec p = BuildControllerPod(Cluster(), in);
  EXPECT_EQ(p.env.at("SLURM_CONF"), std::string(kControllerConfigDir) + "/slurm.conf");
  ASSERT_NE(FindMount(p, kControllerConfigDir), nullptr);
  EXPECT_EQ(FindMount(p, kControllerConfigDir)->source, runtime::MountSource::kEmptyDir);
  ASSERT_GE(p.command.size(), 5u);
  EXPECT_NE(p.command[2].find("[ -e \"$live/slurm.conf\" ] || cp -L"), std::string::npos) << p.command[2];
  in.controller_config_pushed = false;
  const runtime::PodSpec plain = BuildControllerPod(Cluster(), in);
  EXPECT_EQ(std::vector<std::string>(p.command.begin() + 4, p.command.end()), plain.command)
      << "then what it runs without the copy";
  EXPECT_FALSE(plain.env.count("SLURM_CONF"));
  in.controller_config_pushed = true;
  in.keep_munge = true;
  EXPECT_FALSE(BuildControllerPod(Cluster(), in).env.count("SLURM_CONF")) << "workers read their own file";
}

TEST(BuildersTest, WorkerPodCarriesTheNodeSetsPlacement) {
  api::NodeSet ns;
  ns.metadata.name = "a100";
  ns.spec.pod.node_selector = {{"nvidia.com/gpu.product", "A100"}};
  ns.spec.pod.tolerations = {{"nvidia.com/gpu", "Exists", "", "NoSchedule", std::nullopt},
                             {"node.kubernetes.io/unreachable", "Exists", "", "NoExecute", 300}};
  ns.spec.pod.priority_class_name = "hpc-batch";
  ns.spec.pod.image_pull_secrets = {"registry-credentials"};
  const runtime::PodSpec p = BuildWorkerPod(Cluster(), ns, 0, Inputs());
  EXPECT_EQ(p.placement.node_selector, ns.spec.pod.node_selector);
  ASSERT_EQ(p.placement.tolerations.size(), 2u);
  EXPECT_EQ(p.placement.tolerations[0].seconds, -1) << "unset stays unset";
  EXPECT_EQ(p.placement.tolerations[1].seconds, 300);
  EXPECT_EQ(p.placement.priority_class, "hpc-batch");
  EXPECT_EQ(p.placement.image_pull_secrets, ns.spec.pod.image_pull_secrets);
  EXPECT_TRUE(BuildControllerPod(Cluster(), Inputs()).placement.empty()) << "only workers belong to a tier";
}

TEST(BuildersTest, WorkerPodRequestsTheNodeSetsShape) {
  api::NodeSet ns;
  ns.metadata.name = "gpu";
  ns.spec.resources.cpus = 8;
  ns.spec.resources.memory_mib = 32768;
  ns.spec.resources.gpus = 2;
  auto pod = BuildWorkerPod(Cluster(), ns, 0, Inputs());
  EXPECT_EQ(pod.resources.requests, (runtime::ResourceList{8, 32768, 2}));
  EXPECT_EQ(pod.resources.limits.gpus, 2);
  EXPECT_EQ(pod.resources.limits.memory_mib, 0) << "jobs are confined by Slurm, not by killing the worker";
  EXPECT_NE(std::find(pod.command.begin(), pod.command.end(), slurm::DynamicNodeConf(ns)), pod.command.end());
}

// Workers get the nodeset's /tmp size and the health check settings.
TEST(BuildersTest, WorkerPodCarriesScratchSizeAndHealthSettings) {
  api::NodeSet ns;
  ns.metadata.name = "cpu";
  ns.spec.resources.tmp_mib = 64;
  ns.spec.health_check_scripts = {{"ecc", "#!/bin/sh\nexit 0\n"}};
  auto c = Cluster();
  auto pod = BuildWorkerPod(c, ns, 0, Inputs());
  EXPECT_EQ(pod.tmp_mib, 64);
  const auto* health = FindMount(pod, "/run/slurm-health");
  ASSERT_NE(health, nullptr);
  EXPECT_EQ(health->name, kConfigMapHealth);
  EXPECT_TRUE(health->read_only);
  auto cm = BuildHealthConfigMap(c, {ns});
  EXPECT_EQ(cm.default_mode, 0755);
  EXPECT_EQ(cm.data.at("cpu.ecc.check"), "#!/bin/sh\nexit 0\n");
  // The cluster's datasets are looked at on every worker.
  EXPECT_NE(cm.data.at("cpu.conf").find("DATASETS=('/shared' '/ref')"), std::string::npos) << cm.data.at("cpu.conf");
  EXPECT_TRUE(BuildScriptsConfigMap().data.count("health_check"));
}

// Workers register as dynamic nodes of their nodeset and see every dataset.
TEST(BuildersTest, WorkerPodIsDynamicSlurmdWithDatasets) {
  api::NodeSet ns;
  ns.metadata.name = "cpu";
  ns.spec.resources = {2, 1000, 0};
  auto pod = BuildWorkerPod(Cluster(), ns, 3, Inputs());
  EXPECT_EQ(pod.name, "cpu-3");
  EXPECT_EQ(pod.labels.at(kLabelNodeSet), "cpu");
  ASSERT_GE(pod.command.size(), 5u);
  EXPECT_EQ(pod.command[0], "slurmd");
  EXPECT_EQ(pod.command[2], "-Z");
  EXPECT_NE(pod.command[4].find("Feature=cpu"), std::string::npos);
  ASSERT_NE(FindMount(pod, "/shared"), nullptr);
  EXPECT_EQ(FindMount(pod, "/shared")->source, runtime::MountSource::kVolume);
  ASSERT_NE(FindMount(pod, "/ref"), nullptr);
  EXPECT_EQ(FindMount(pod, "/ref")->source, runtime::MountSource::kHostPath);
  EXPECT_EQ(pod.readiness.tcp_port, 6818);
  EXPECT_EQ(WorkerOrdinal(ns, "cpu-3"), 3);
  EXPECT_EQ(WorkerOrdinal(ns, "cpu-x"), -1);
  EXPECT_EQ(WorkerOrdinal(ns, "gpu-1"), -1);
}

// slurmrestd must not run as root or SlurmUser, needs SLURM_JWT=daemon, and is bounded in
// memory (its 22.05 release keeps what each job listing took).
TEST(BuildersTest, RestApiRunsUnprivilegedWithJwtDaemonMode) {
  auto pod = BuildRestApiPod(Cluster(), Inputs());
  EXPECT_EQ(pod.uid, 65534);
  EXPECT_EQ(pod.env.at("SLURM_JWT"), "daemon");
  EXPECT_EQ(pod.command.back(), "0.0.0.0:6820");
  EXPECT_EQ(pod.resources.limits.memory_mib, 2048);
  auto c = Cluster();
  c.spec.rest_memory_limit_mib = 0;
  EXPECT_EQ(BuildRestApiPod(c, Inputs()).resources.limits.memory_mib, 0);
}

// The controller keeps its state on the persistent volume and reads the JWT key secret.
TEST(BuildersTest, ControllerStateOnVolume) {
  auto pod = BuildControllerPod(Cluster(), Inputs());
  const auto* state = FindMount(pod, "/run/slurm/state");
  ASSERT_NE(state, nullptr);
  EXPECT_EQ(state->source, runtime::MountSource::kVolume);
  ASSERT_NE(FindMount(pod, "/run/secrets/jwt"), nullptr);
  EXPECT_TRUE(FindMount(pod, "/run/secrets/jwt")->read_only);
}

// Each user gets a passwd entry and a private group of the same id.
TEST(BuildersTest, UsersConfigMapAddsPrivateGroups) {
  auto cm = BuildUsersConfigMap(Cluster(), {}, Inputs());
  EXPECT_NE(cm.data.at("passwd").find("\nalice:x:2001:2001:"), std::string::npos);
  EXPECT_NE(cm.data.at("group").find("\nalice:x:2001:alice\n"), std::string::npos);
  EXPECT_NE(cm.data.at("users.json").find("\"alice\""), std::string::npos);
}

// Where jobs are confined, the worker pods (and only they) get their cgroups delegated, and
// cgroup.conf sits next to slurm.conf.
TEST(BuildersTest, ConfinedWorkersGetTheirCgroupsDelegatedAndCgroupConf) {
  api::NodeSet ns;
  ns.metadata.name = "cpu";
  ns.spec.resources.cpus = 2;
  BuildInputs in = Inputs();
  EXPECT_FALSE(BuildWorkerPod(Cluster(), ns, 0, in).delegate_cgroups);
  EXPECT_EQ(BuildSlurmConfigMap(Cluster(), {ns}).data.count("cgroup.conf"), 0u);
  in.job_cgroups = slurm::JobCgroups::kV1;
  EXPECT_TRUE(BuildWorkerPod(Cluster(), ns, 0, in).delegate_cgroups);
  EXPECT_FALSE(BuildControllerPod(Cluster(), in).delegate_cgroups);
  EXPECT_FALSE(BuildLoginPod(Cluster(), in).delegate_cgroups);
  BuildInputs confined;
  confined.job_cgroups = slurm::JobCgroups::kV1;
  const auto cm = BuildSlurmConfigMap(Cluster(), {ns}, confined);
  ASSERT_EQ(cm.data.count("cgroup.conf"), 1u);
  EXPECT_NE(cm.data.at("cgroup.conf").find("ConstrainRAMSpace=yes"), std::string::npos);
  EXPECT_EQ(cm.data.count("gres.conf"), 0u);  // no GPUs
}

// A nodeset with GPUs: gres.conf beside slurm.conf (slurmctld serves it to configless workers)
// and jobs confined to their GPUs; the worker asks for its GPUs.
TEST(BuildersTest, GpuNodesetsGetGresConfAndConfinedDevices) {
  api::NodeSet ns;
  ns.metadata.name = "gpu";
  ns.spec.resources.cpus = 2;
  ns.spec.resources.gpus = 2;
  BuildInputs in = Inputs();
  in.release = {26, 5, 5};
  in.job_cgroups = slurm::JobCgroups::kV1;
  const auto cm = BuildSlurmConfigMap(Cluster(), {ns}, in);
  ASSERT_EQ(cm.data.count("gres.conf"), 1u);
  EXPECT_NE(cm.data.at("gres.conf").find("\nAutoDetect=nvidia\n"), std::string::npos) << cm.data.at("gres.conf");
  EXPECT_NE(cm.data.at("cgroup.conf").find("\nConstrainDevices=yes\n"), std::string::npos);
  const auto pod = BuildWorkerPod(Cluster(), ns, 0, in);
  EXPECT_EQ(pod.resources.limits.gpus, 2);
}

// Pods run the image pinned for their environment; a nodeset's own environment, built after the
// daemon pinned the others, goes by its name; without images (Kubernetes) nothing is set.
TEST(BuildersTest, PodsRunTheirEnvironmentsImageAndNeverSilentlyTheHosts) {
  auto in = Inputs();
  EXPECT_EQ(BuildControllerPod(Cluster(), in).image, "");
  in.images = {{"slurm-26.05", "slurm-26.05@sha256:aa"}};
  api::NodeSet ns;
  ns.metadata.name = "gpu";
  EXPECT_EQ(BuildControllerPod(Cluster(), in).image, "slurm-26.05@sha256:aa");
  EXPECT_EQ(BuildWorkerPod(Cluster(), ns, 0, in).image, "slurm-26.05@sha256:aa");
  ns.spec.environment = "gpu-26.05";
  EXPECT_EQ(BuildWorkerPod(Cluster(), ns, 0, in).image, "gpu-26.05");
  // A shared root: workers read-only, the login pod writable; daemons keep the plain image.
  auto c = Cluster();
  c.spec.shared_root = true;
  ns.spec.environment.clear();
  EXPECT_EQ(BuildWorkerPod(c, ns, 0, in).shared_root, kVolumeSharedRoot);
  EXPECT_FALSE(BuildWorkerPod(c, ns, 0, in).shared_root_writable);
  EXPECT_TRUE(BuildLoginPod(c, in).shared_root_writable);
  EXPECT_EQ(BuildControllerPod(c, in).shared_root, "");
}

// A workspace's login pod runs the project's workspace environment when it names one (and then
// not the shared root, a copy of the cluster's environment), else the cluster's.
TEST(BuildersTest, WorkspaceLoginPodsRunTheirWorkspaceEnvironment) {
  auto in = Inputs();
  in.images = {{"slurm-26.05", "slurm-26.05@sha256:aa"}, {"workspace-26.05", "workspace-26.05@sha256:bb"}};
  auto c = Cluster();
  c.spec.shared_root = true;
  api::Workspace w;
  w.metadata.name = "alice-ml";
  w.spec.user = {"alice", 2001, 2001, false, ""};
  w.spec.project = "ml";
  auto plain = BuildWorkspaceLoginPod(c, w, in);
  EXPECT_EQ(plain.image, "slurm-26.05@sha256:aa");
  EXPECT_EQ(plain.shared_root, kVolumeSharedRoot);
  EXPECT_FALSE(plain.shared_root_writable);
  w.spec.environment = "workspace-26.05";
  auto own = BuildWorkspaceLoginPod(c, w, in);
  EXPECT_EQ(own.image, "workspace-26.05@sha256:bb");
  EXPECT_EQ(own.shared_root, "");
}

TEST(BuildersTest, TheClusterLoginPodRunsAsRootOnlyWhereExecCannotEnterAnotherUser) {
  auto in = Inputs();
  auto local = BuildLoginPod(Cluster(), in);
  EXPECT_EQ(local.uid, in.nobody.uid) << "local exec enters any user: the pod's own process holds nothing";
  in.exec_as_container_user = true;
  auto kube = BuildLoginPod(Cluster(), in);
  EXPECT_EQ(kube.uid, 0) << "pods/exec starts as the container's user: root, to become the user or stay root";
  EXPECT_EQ(kube.gid, 0);
}

TEST(BuildersTest, ASharedRootIsOneVolumeOfTheCluster) {
  auto in = Inputs();
  in.images = {{"slurm-26.05", "registry.example/slurm:26.05"}};
  auto c = Cluster();
  c.spec.shared_root = true;
  EXPECT_EQ(BuildLoginPod(c, in).shared_root, kVolumeSharedRoot);
  EXPECT_TRUE(BuildLoginPod(c, in).shared_root_writable) << "the admin installs there";
  in.images.clear();
  EXPECT_EQ(BuildLoginPod(c, in).shared_root, "") << "without an image there is nothing to copy";
}

// Whether `command`, run as PID 1 of a PID namespace (as a container's main process is), ends
// within a second of SIGTERM. Real processes: unshare(1) and the command itself.
bool EndsOnSigtermAsPid1(const std::vector<std::string>& command) {
  std::vector<std::string> argv = {"bash", "-c", R"(
    unshare --pid --fork -- "$@" & u=$!
    for _ in $(seq 100); do c=$(pgrep -P $u) && break; sleep 0.02; done
    # A shell has set its traps once it started its child.
    for _ in $(seq 20); do pgrep -P "$c" >/dev/null && break; sleep 0.02; done
    kill -TERM "$c"
    for _ in $(seq 50); do kill -0 $u 2>/dev/null || exit 0; sleep 0.02; done
    kill -KILL "$c"; exit 1)",
                                   "pid1"};
  argv.insert(argv.end(), command.begin(), command.end());
  auto r = RunProcess(argv);
  return r.ok() && r->exit_code == 0;
}

// Login pods end at once when stopped: their main process exits on SIGTERM as PID 1, where a bare
// `sleep infinity` ignores it and Kubernetes waits out the grace period (30 s a stopped workspace).
TEST(BuildersTest, LoginPodsEndAtOnceOnSigterm) {
  auto in = Inputs();
  api::Workspace w;
  w.metadata.name = "alice-ml";
  w.spec.user = {"alice", 2001, 2001, false, ""};
  EXPECT_TRUE(EndsOnSigtermAsPid1(BuildLoginPod(Cluster(), in).command));
  EXPECT_TRUE(EndsOnSigtermAsPid1(BuildWorkspaceLoginPod(Cluster(), w, in).command));
  EXPECT_FALSE(EndsOnSigtermAsPid1({"sleep", "infinity"})) << "the check would not tell them apart";
}

// 23.11 on: slurmrestd's plugins by component, and slurmctld recovers despite a missing state file.
TEST(BuildersTest, DaemonsAreStartedAsTheirReleaseWants) {
  auto in = Inputs();
  auto rest = BuildRestApiPod(Cluster(), in);
  EXPECT_NE(std::find(rest.command.begin(), rest.command.end(), "openapi/v0.0.38"), rest.command.end());
  in.release = slurm::Release::Parse("26.05.5").value();
  rest = BuildRestApiPod(Cluster(), in);
  EXPECT_NE(std::find(rest.command.begin(), rest.command.end(), "openapi/slurmctld"), rest.command.end());
  auto ctld = BuildControllerPod(Cluster(), in);
  EXPECT_NE(ctld.command.back().find("exec slurmctld -D -i"), std::string::npos) << ctld.command.back();
}

// 25.11 on, slurmctld's own /readyz and /livez decide; before, a TCP connect and `scontrol ping`
// started in the pod every 15 s.
TEST(BuildersTest, TheControllerIsProbedThroughItsOwnHttpEndpointsWhereItHasThem) {
  auto in = Inputs();
  auto old = BuildControllerPod(Cluster(), in);
  EXPECT_EQ(old.readiness.tcp_port, slurm::kSlurmctldPort);
  EXPECT_EQ(old.readiness.http_path, "");
  EXPECT_EQ(old.liveness.command, (std::vector<std::string>{"scontrol", "ping"}));
  in.release = slurm::Release::Parse("26.05.5").value();
  auto ctld = BuildControllerPod(Cluster(), in);
  EXPECT_EQ(ctld.readiness.tcp_port, slurm::kSlurmctldPort);
  EXPECT_EQ(ctld.readiness.http_path, "/readyz");
  EXPECT_EQ(ctld.liveness.http_port, slurm::kSlurmctldPort);
  EXPECT_EQ(ctld.liveness.http_path, "/livez");
  EXPECT_TRUE(ctld.liveness.command.empty());
}

}  // namespace
}  // namespace hpc::op
