// The cluster reconciler against fakes: components come up in their order, Ready needs Slurm's
// answer, a changed spec replaces only its pod, keys are made once, and a reconciler started
// after a crash adopts what runs instead of recreating it.
#include "operator/cluster_reconciler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "common/jwt.h"
#include "fakes/fake_pod_runtime.h"
#include "fakes/fake_slurm.h"
#include "operator/cluster_controllers.h"
#include "operator/conditions.h"

namespace hpc::op {
namespace {

std::string ConditionStatus(const api::SlurmClusterStatus& st, const std::string& type) {
  const auto* c = FindCondition(st.conditions, type);
  return c ? c->status : "";
}

class ClusterReconcilerTest : public ::testing::Test {
 protected:
  ClusterReconcilerTest() {
    cluster_.metadata.name = "c1";
    cluster_.metadata.generation = 3;
  }
  std::unique_ptr<ClusterReconciler> NewReconciler() {
    return std::make_unique<ClusterReconciler>(
        &rt_, inputs_, [this](const std::string&, int) { return std::make_unique<fakes::ForwardingReader>(&slurm_); },
        &slurm_);
  }
  api::SlurmClusterStatus Pass() {
    cluster_.status = rec_->Reconcile(cluster_, {});
    return cluster_.status;
  }
  bool HasPod(const std::string& name) const { return rt_.pods.count(name) > 0; }
  // What the controller pod's `cat /etc/slurm/slurm.conf` prints: *mounted, as the test sets it
  // (a kubelet updates a mounted ConfigMap some time after it changed).
  void ControllerPodReads(const std::string* mounted) {
    rt_.exec_handler = [this, mounted](const std::string& pod, const runtime::ExecOptions& o) {
      ProcessResult r;
      r.exit_code = 0;
      if (pod == ControllerPodName(cluster_) && o.argv == std::vector<std::string>{"cat", "/etc/slurm/slurm.conf"}) {
        r.out = *mounted;
      }
      return r;
    };
  }

  fakes::FakePodRuntime rt_;
  fakes::FakeSlurm slurm_;
  BuildInputs inputs_ = [] {
    BuildInputs in;
    in.mysql = {105, 105};
    return in;
  }();
  api::SlurmCluster cluster_;
  std::unique_ptr<ClusterReconciler> rec_ = NewReconciler();
};

TEST_F(ClusterReconcilerTest, MungeComesFirstThenTheRestSideBySide) {
  rt_.not_ready.insert(MungePodName(cluster_));
  auto st = Pass();
  EXPECT_TRUE(HasPod(MungePodName(cluster_)));
  EXPECT_FALSE(HasPod(ControllerPodName(cluster_))) << "nothing authenticates before munged runs";
  EXPECT_EQ(ConditionStatus(st, "Ready"), "False");
  EXPECT_EQ(ConditionStatus(st, "Progressing"), "True");
  EXPECT_EQ(st.components.at("munge").rfind("Waiting", 0), 0u) << st.components.at("munge");
  // Keys and configuration exist before any pod that needs them.
  EXPECT_TRUE(rt_.secrets.count(kSecretMunge));
  EXPECT_TRUE(rt_.secrets.count(kSecretJwt));
  EXPECT_TRUE(rt_.config_maps.count(kConfigMapSlurm));

  rt_.not_ready.clear();
  rt_.not_ready.insert(ControllerPodName(cluster_));
  st = Pass();
  // slurmrestd and the login pod do not wait for slurmctld.
  EXPECT_TRUE(HasPod(ControllerPodName(cluster_)));
  EXPECT_TRUE(HasPod(RestApiPodName(cluster_)));
  EXPECT_TRUE(HasPod(LoginPodName(cluster_)));
  EXPECT_EQ(ConditionStatus(st, "Ready"), "False");
  EXPECT_EQ(ConditionStatus(st, "Degraded"), "False") << "bring-up is not a fault";
  EXPECT_EQ(rec_->reader(), nullptr) << "Slurm is not asked before slurmctld listens";

  rt_.not_ready.clear();
  st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Ready"), "True");
  EXPECT_EQ(ConditionStatus(st, "Progressing"), "False");
  EXPECT_EQ(st.component_versions.at("slurm/slurmctld"), "22.05.8");
  EXPECT_EQ(st.observed_generation, 3);
  EXPECT_NE(rec_->reader(), nullptr);
  EXPECT_TRUE(rt_.deleted.empty());
}

TEST_F(ClusterReconcilerTest, WithMungeSidecarsThereIsNoMungePodAndNoSharedSocket) {
  inputs_.auth_sidecars = true;
  rec_ = NewReconciler();
  auto st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Ready"), "True");
  EXPECT_FALSE(HasPod(MungePodName(cluster_)));
  EXPECT_FALSE(rt_.volumes.count(kVolumeMungeSocket)) << "a Unix socket cannot be shared across machines";
  EXPECT_TRUE(rt_.secrets.count(kSecretMunge)) << "each sidecar reads the one key";
  for (const auto& name : {ControllerPodName(cluster_), RestApiPodName(cluster_), LoginPodName(cluster_)}) {
    ASSERT_TRUE(HasPod(name));
    const auto& pod = rt_.pods.at(name);
    ASSERT_EQ(pod.sidecars.size(), 1u) << name;
    EXPECT_EQ(pod.sidecars[0].name, "munged");
    EXPECT_FALSE(st.components.count("munge"));
  }
}

// 23.11 on (auth/slurm): Slurm's key instead of munge's, made once and owned by SlurmUser; no
// munge pod, and sackd (for the pods of clients) starts beside the daemons, which need nothing
// from it. A munge pod left from before an upgrade across 23.11 goes.
TEST_F(ClusterReconcilerTest, AuthSlurmMakesTheKeyOnceAndStartsSackdBesideTheDaemons) {
  inputs_.release = {26, 5, 5};
  inputs_.slurm = {64030, 64030};
  rec_ = NewReconciler();
  runtime::PodSpec old_munge;
  old_munge.name = MungePodName(cluster_);
  ASSERT_TRUE(rt_.CreatePod(old_munge).ok());
  rt_.not_ready.insert(SackdPodName(cluster_));
  auto st = Pass();
  EXPECT_FALSE(HasPod(MungePodName(cluster_)));
  EXPECT_EQ(rt_.deleted, std::vector<std::string>{MungePodName(cluster_)});
  EXPECT_TRUE(HasPod(SackdPodName(cluster_)));
  EXPECT_TRUE(HasPod(ControllerPodName(cluster_))) << "Slurm's daemons do not wait for sackd";
  EXPECT_EQ(st.components.at("sackd").rfind("Waiting", 0), 0u) << st.components.at("sackd");
  EXPECT_FALSE(rt_.secrets.count(kSecretMunge));
  ASSERT_TRUE(rt_.secrets.count(kSecretSlurmKey));
  const runtime::Secret key = rt_.secrets.at(kSecretSlurmKey);
  EXPECT_EQ(key.owner_uid, 64030);
  EXPECT_EQ(key.data.at("slurm.key").size(), 128u);
  EXPECT_TRUE(rt_.volumes.count(kVolumeSackSocket));
  EXPECT_FALSE(rt_.volumes.count(kVolumeMungeSocket));

  rt_.not_ready.clear();
  st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Ready"), "True");
  EXPECT_FALSE(st.component_versions.count("munge"));
  EXPECT_EQ(rt_.secrets.at(kSecretSlurmKey).data, key.data) << "never a new key: it would end every credential";
}

// hpcplane's own upgrade must not cut a running cluster's daemons off: one made with munge keeps
// it while its pods run, and switches to auth/slurm when it next starts with no pod.
TEST(InputsForRunningClusterTest, AClusterRunningMungeKeepsItUntilItStartsWithNoPod) {
  fakes::FakePodRuntime rt;
  BuildInputs in;
  in.release = {26, 5, 5};
  auto now = InputsForRunningCluster(&rt, in, "c1");
  ASSERT_TRUE(now.ok());
  EXPECT_FALSE(now->keep_munge) << "a new cluster authenticates with auth/slurm";

  ASSERT_TRUE(rt.ApplySecret({kSecretMunge, {{"munge.key", "k"}}, 0, 0}).ok());
  runtime::PodSpec controller;
  controller.name = "c1-controller";
  controller.labels = {{kLabelCluster, "c1"}, {kLabelComponent, "controller"}};
  ASSERT_TRUE(rt.CreatePod(controller).ok());
  now = InputsForRunningCluster(&rt, in, "c1");
  ASSERT_TRUE(now.ok());
  EXPECT_TRUE(now->keep_munge) << "its pods run munge";
  EXPECT_TRUE(UsesMunge(*now));
  const std::string conf = BuildSlurmConfigMap(api::SlurmCluster{}, {}, *now).data.at("slurm.conf");
  EXPECT_NE(conf.find("AuthType=auth/munge"), std::string::npos);
  EXPECT_EQ(conf.find("enable_configless"), std::string::npos) << "its workers keep reading their file";

  ASSERT_TRUE(rt.DeletePod("c1-controller").ok());
  now = InputsForRunningCluster(&rt, in, "c1");
  ASSERT_TRUE(now.ok());
  EXPECT_FALSE(now->keep_munge) << "started from no pod: nothing to cut off";

  in.release = {22, 5, 8};
  EXPECT_FALSE(InputsForRunningCluster(&rt, in, "c1")->keep_munge) << "22.05 has munge anyway";
}

TEST_F(ClusterReconcilerTest, ASharedRootGetsOneSharedVolume) {
  inputs_.images = {{"slurm-26.05", "registry.example/slurm:26.05"}};
  cluster_.spec.shared_root = true;
  rec_ = NewReconciler();
  Pass();
  ASSERT_TRUE(rt_.volumes.count(kVolumeSharedRoot));
  EXPECT_EQ(rt_.volumes.at(kVolumeSharedRoot), 0755u) << "root's, readable by every pod";
  EXPECT_EQ(rt_.pods.at(LoginPodName(cluster_)).shared_root, kVolumeSharedRoot);
}

TEST_F(ClusterReconcilerTest, SlurmNotAnsweringIsDegradedAndGivesNoReader) {
  Pass();
  slurm_.reachable = false;
  auto st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Ready"), "False");
  EXPECT_EQ(ConditionStatus(st, "Degraded"), "True");
  EXPECT_NE(FindCondition(st.conditions, "Degraded")->message.find("slurmctld does not answer"), std::string::npos);
  // Reconcilers after it see no reader: they fail closed instead of acting on a guess.
  EXPECT_EQ(rec_->reader(), nullptr);
  EXPECT_TRUE(rt_.deleted.empty()) << "nothing is removed because Slurm is away";
}

TEST_F(ClusterReconcilerTest, AChangedSpecReplacesOnlyItsPod) {
  Pass();
  const std::string munge_key = rt_.secrets.at(kSecretMunge).data.at("munge.key");
  cluster_.spec.rest_memory_limit_mib = 4096;
  Pass();
  EXPECT_EQ(rt_.deleted, std::vector<std::string>{RestApiPodName(cluster_)});
  EXPECT_EQ(rt_.pods.at(RestApiPodName(cluster_)).resources.limits.memory_mib, 4096);
  EXPECT_EQ(rt_.secrets.at(kSecretMunge).data.at("munge.key"), munge_key) << "keys are made once";
}

TEST_F(ClusterReconcilerTest, AReconcilerStartedAfterACrashAdoptsWhatRuns) {
  Pass();
  const auto secrets = rt_.secrets;
  const size_t created = rt_.created.size();
  rec_ = NewReconciler();  // a new daemon: nothing in memory
  auto st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Ready"), "True");
  EXPECT_EQ(rt_.created.size(), created) << "no pod is created twice: " << testing::PrintToString(rt_.created);
  EXPECT_TRUE(rt_.deleted.empty()) << "no running pod is replaced: " << testing::PrintToString(rt_.deleted);
  for (const auto& [name, s] : secrets) EXPECT_EQ(rt_.secrets.at(name).data, s.data) << name;
}

TEST_F(ClusterReconcilerTest, APodThatDiedIsCreatedAgainAndRestartsMarkItDegraded) {
  Pass();
  rt_.pods.erase(ControllerPodName(cluster_));  // gone mid-flight, e.g. its node was lost
  auto st = Pass();
  EXPECT_TRUE(HasPod(ControllerPodName(cluster_)));
  rt_.not_ready.insert(ControllerPodName(cluster_));
  rt_.restarts[ControllerPodName(cluster_)] = 2;
  st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Degraded"), "True");
  EXPECT_NE(st.components.at("controller").find("2 restarts"), std::string::npos) << st.components.at("controller");
}

// Slurm's heartbeat says which controller serves (its index, and how old it is): the status
// names that pod and Slurm's commands go there; a stale heartbeat is no controller serving, and
// the commands stay where they went. Turned off, the backup's pod goes.
TEST_F(ClusterReconcilerTest, TheHeartbeatSaysWhichControllerServesAndCommandsFollowIt) {
  cluster_.spec.backup_controller = true;
  rec_ = NewReconciler();
  slurm::CommandPod command_pod(ControllerPodName(cluster_));
  rec_->SetCommandPod(&command_pod);
  const std::string primary = ControllerPodName(cluster_), backup = BackupControllerPodName(cluster_);
  int64_t beat_at = jwt::UnixNow();
  int64_t beat_by = 0;
  rt_.exec_handler = [&](const std::string&, const runtime::ExecOptions& o) {
    ProcessResult r;
    r.exit_code = 0;
    if (o.argv == slurm::ReadHeartbeatCommand()) {
      for (int shift = 56; shift >= 0; shift -= 8) r.out += fmt::format(" {:02x}", (beat_at >> shift) & 0xff);
      for (int shift = 56; shift >= 0; shift -= 8) r.out += fmt::format(" {:02x}", (beat_by >> shift) & 0xff);
      r.out += "\n";
    }
    return r;
  };
  auto st = Pass();
  ASSERT_TRUE(HasPod(backup));
  EXPECT_EQ(st.components.at("controller-backup"), "Ready");
  EXPECT_EQ(st.leading_controller, primary);
  EXPECT_EQ(command_pod.Get(), primary);
  EXPECT_EQ(ConditionStatus(st, "Ready"), "True");

  // The primary's machine is lost: the backup beats, read in its own pod.
  rt_.exec_fails = {primary};
  rt_.not_ready.insert(primary);
  beat_by = 1;
  st = Pass();
  EXPECT_EQ(st.leading_controller, backup);
  EXPECT_EQ(command_pod.Get(), backup);
  EXPECT_TRUE(rec_->controller_ready()) << "the passes go on through the backup";

  // Its heartbeat stops: none serves, and the commands stay where they went.
  beat_at -= 3 * slurm::kSlurmctldTimeoutWithBackup;
  st = Pass();
  EXPECT_EQ(st.leading_controller, "");
  EXPECT_EQ(command_pod.Get(), backup);

  // A backup standing by is no controller: nothing serves while the primary is not ready.
  EXPECT_FALSE(rec_->controller_ready());

  // Turned off while it serves, the backup stays until the primary serves again (the primary's
  // pod is started again: slurmctld reads its controllers at its start).
  beat_at = jwt::UnixNow();
  EXPECT_EQ(Pass().leading_controller, backup);
  cluster_.spec.backup_controller = false;
  st = Pass();
  EXPECT_TRUE(HasPod(backup));
  EXPECT_EQ(st.leading_controller, backup);
  EXPECT_EQ(std::count(rt_.deleted.begin(), rt_.deleted.end(), backup), 0);
  EXPECT_EQ(rt_.deleted, std::vector<std::string>{primary});
  cluster_.spec.backup_controller = true;

  rt_.exec_fails.clear();
  rt_.not_ready.clear();
  beat_by = 0;
  EXPECT_EQ(Pass().leading_controller, primary);
  EXPECT_EQ(command_pod.Get(), primary);

  cluster_.spec.backup_controller = false;
  st = Pass();
  EXPECT_FALSE(HasPod(backup));
  EXPECT_EQ(std::count(rt_.deleted.begin(), rt_.deleted.end(), backup), 1);
  EXPECT_EQ(st.leading_controller, primary);
  EXPECT_EQ(st.components.count("controller-backup"), 0u);
}

// slurmdbd's pod starts beside MariaDB's, so its name resolves from the start; slurmdbd itself
// waits inside it for the database, and slurmctld for slurmdbd.
TEST_F(ClusterReconcilerTest, AccountingStartsSlurmdbdBesideTheDatabaseAndItWaitsForItInItsPod) {
  cluster_.spec.accounting.enabled = true;
  rt_.not_ready.insert(MariaDbPodName(cluster_));
  rt_.not_ready.insert(SlurmdbdPodName(cluster_));
  auto st = Pass();
  EXPECT_TRUE(HasPod(MariaDbPodName(cluster_)));
  ASSERT_TRUE(HasPod(SlurmdbdPodName(cluster_)));
  EXPECT_TRUE(HasPod(ControllerPodName(cluster_)));
  EXPECT_EQ(st.components.at("slurmdbd"), "Waiting: for mariadb");
  EXPECT_TRUE(rt_.secrets.count(kSecretDatabase));
  const auto& dbd = rt_.pods.at(SlurmdbdPodName(cluster_)).command;
  ASSERT_EQ(dbd.size(), 3u);
  EXPECT_NE(dbd[2].find("/dev/tcp/" + MariaDbPodName(cluster_) + "/3306"), std::string::npos) << dbd[2];
  EXPECT_NE(dbd[2].find("exec slurmdbd -D"), std::string::npos) << dbd[2];
  const auto& ctld = rt_.pods.at(ControllerPodName(cluster_)).command;
  ASSERT_EQ(ctld.size(), 3u);
  EXPECT_NE(ctld[2].find("/dev/tcp/" + SlurmdbdPodName(cluster_) + "/6819"), std::string::npos) << ctld[2];
  rt_.not_ready.clear();
  st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Ready"), "True");
}

TEST_F(ClusterReconcilerTest, AccountingWithoutMariaDbFailsWithWhatToInstall) {
  cluster_.spec.accounting.enabled = true;
  inputs_.mysql = {-1, -1};
  rec_ = NewReconciler();
  auto st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Ready"), "False");
  EXPECT_NE(FindCondition(st.conditions, "Ready")->message.find("install mariadb-server"), std::string::npos);
  EXPECT_TRUE(rt_.pods.empty()) << "no pod starts without its keys";
}

TEST_F(ClusterReconcilerTest, SlurmctldReconfiguresOnlyOnceItsPodReadsTheNewSlurmConf) {
  Pass();
  ASSERT_EQ(ConditionStatus(Pass(), "Ready"), "True");
  // What the controller pod reads: a kubelet updates a mounted ConfigMap some time after it
  // changed (the local runtime at once).
  std::string mounted = rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf");
  ControllerPodReads(&mounted);
  cluster_.spec.priority_type = "priority/multifactor";  // beyond nodesets and partitions
  Pass();
  const std::string wanted = rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf");
  ASSERT_NE(wanted, mounted);
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 0)
      << "told before its pod has the file, slurmctld would reread the old one";
  Pass();
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 0);
  mounted = wanted;  // the kubelet's sync
  Pass();
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 1);
  Pass();
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 1) << "once per change";
}

// Where the operator writes slurm.conf into the controller pod (Kubernetes): a change reaches
// slurmctld, and through it every configless slurmd, at once instead of after the kubelet's
// refresh of the mount; written again for a restarted controller, never twice for one.
TEST_F(ClusterReconcilerTest, APushedConfigReconfiguresAtOnceAndIsWrittenAgainForARestartedController) {
  inputs_.controller_config_pushed = true;
  inputs_.release = {26, 5, 5};  // configless workers: with munge slurmctld reads the mount
  rec_ = NewReconciler();
  std::map<std::string, std::string> live;  // the controller pod's kControllerConfigDir
  int writes = 0;
  rt_.exec_handler = [&](const std::string& pod, const runtime::ExecOptions& o) {
    ProcessResult r;
    r.exit_code = 0;
    if (pod != ControllerPodName(cluster_)) return r;
    if (o.argv.size() == 5 && o.argv[3] == "push") {
      live[o.argv[4]] = o.stdin_data;
      ++writes;
    } else if (o.argv.size() == 2 && o.argv[0] == "cat") {
      // Before any push: what the controller's start copied from the mount.
      r.out = live.count(o.argv[1]) ? live[o.argv[1]] : rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf");
    }
    return r;
  };
  Pass();
  ASSERT_EQ(ConditionStatus(Pass(), "Ready"), "True");
  const std::string conf = std::string(kControllerConfigDir) + "/slurm.conf";
  EXPECT_EQ(live[conf], rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf"));
  EXPECT_EQ(live[std::string(kControllerConfigDir) + "/job_submit.lua"],
            rt_.config_maps.at(kConfigMapSlurm).data.at("job_submit.lua"));
  const auto& pod = rt_.pods.at(ControllerPodName(cluster_));
  EXPECT_EQ(pod.env.at("SLURM_CONF"), conf) << "slurmctld and the commands run in its pod read the copy";
  const int first = writes;
  Pass();
  EXPECT_EQ(writes, first) << "nothing changed: nothing written";

  cluster_.spec.priority_type = "priority/multifactor";  // beyond nodesets and partitions
  Pass();
  EXPECT_NE(live[conf].find("PriorityType=priority/multifactor"), std::string::npos);
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 1)
      << "the pushed file is read at once: no waiting for a kubelet";
  Pass();
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 1);

  const int before_restart = writes;
  rt_.started_at[ControllerPodName(cluster_)] = 1700000000;  // its process started again
  Pass();
  Pass();
  EXPECT_GT(writes, before_restart) << "a controller started again gets the newest files";
}

// The promise to reconfigure outlives the operator process that made it: a leader that fails
// over before the kubelet updated the file leaves the condition Reconfiguring in the status, and
// the next process tells slurmctld once the pod reads the file. Without it: no reconfigure.
TEST_F(ClusterReconcilerTest, APendingReconfigureSurvivesTheOperatorsFailOver) {
  Pass();
  ASSERT_EQ(ConditionStatus(Pass(), "Ready"), "True");
  EXPECT_EQ(ConditionStatus(cluster_.status, kConditionReconfiguring), "False");
  std::string mounted = rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf");
  ControllerPodReads(&mounted);
  cluster_.spec.priority_type = "priority/multifactor";
  EXPECT_EQ(ConditionStatus(Pass(), kConditionReconfiguring), "True");
  rec_ = NewReconciler();  // the leader failed over: the new one sees no change to the ConfigMap
  mounted = rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf");
  Pass();
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 1);
  EXPECT_EQ(ConditionStatus(cluster_.status, kConditionReconfiguring), "False");
  rec_ = NewReconciler();  // nothing pending: a new process reconfigures nothing
  Pass();
  EXPECT_EQ(std::count(slurm_.calls.begin(), slurm_.calls.end(), "reconfigure"), 1);
}

// 24.11 -> 26.05 while the cluster runs: slurmdbd first, slurmctld once slurmdbd runs the new
// release, slurmrestd and the login pod once slurmctld does; slurm.conf stays readable by the
// oldest daemon (a worker still on 24.11) until it is gone.
TEST_F(ClusterReconcilerTest, ARollingUpgradeMovesSlurmdbdThenSlurmctldThenTheRestAndWritesForTheOldest) {
  cluster_.spec.accounting.enabled = true;
  cluster_.spec.environment = "slurm-24.11";
  const std::string old_image = "slurm-24.11@sha256:old", new_image = "slurm-26.05@sha256:new";
  inputs_.images = {{"slurm-24.11", old_image}, {"slurm-26.05", new_image}};
  inputs_.environment_releases = {{"slurm-24.11", {24, 11, 5}}, {"slurm-26.05", {26, 5, 5}}};
  inputs_.release = {24, 11, 5};
  rec_ = NewReconciler();
  ASSERT_EQ(ConditionStatus(Pass(), "Ready"), "True");
  runtime::PodSpec worker;
  worker.name = "cpu-0";
  worker.image = old_image;
  worker.labels = {{kLabelCluster, "c1"}, {kLabelComponent, "worker"}};
  ASSERT_TRUE(rt_.CreatePod(worker).ok());
  auto image_of = [&](const std::string& pod) { return rt_.pods.at(pod).image; };

  cluster_.spec.environment = "slurm-26.05";
  inputs_.release = {26, 5, 5};
  rec_ = NewReconciler();
  rt_.not_ready = {SlurmdbdPodName(cluster_)};  // converting the database
  auto st = Pass();
  EXPECT_EQ(image_of(SlurmdbdPodName(cluster_)), new_image);
  EXPECT_EQ(image_of(ControllerPodName(cluster_)), old_image);
  EXPECT_EQ(image_of(LoginPodName(cluster_)), old_image);
  EXPECT_EQ(image_of(RestApiPodName(cluster_)), old_image);
  EXPECT_NE(st.components.at("controller").find("until slurmdbd"), std::string::npos) << st.components.at("controller");
  EXPECT_TRUE(rec_->controller_ready()) << "the old slurmctld still serves";
  EXPECT_FALSE(rec_->controller_current());
  EXPECT_EQ(ConditionStatus(st, "Upgrading"), "True");
  // Written for 24.11: no key it does not know; MpiDefault as 26.05 launches MPI.
  std::string conf = rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf");
  EXPECT_EQ(conf.find("HealthCheckTimeout"), std::string::npos) << conf;
  EXPECT_EQ(conf.find("MetricsType"), std::string::npos) << conf;
  EXPECT_NE(conf.find("MpiDefault=pmi2"), std::string::npos) << conf;

  rt_.not_ready = {ControllerPodName(cluster_)};  // slurmdbd ready; slurmctld starting on 26.05
  st = Pass();
  EXPECT_EQ(image_of(ControllerPodName(cluster_)), new_image);
  EXPECT_EQ(image_of(LoginPodName(cluster_)), old_image) << "a client is never newer than slurmctld";
  EXPECT_EQ(image_of(RestApiPodName(cluster_)), old_image);

  rt_.not_ready.clear();
  st = Pass();
  EXPECT_TRUE(rec_->controller_current());
  EXPECT_EQ(image_of(SackdPodName(cluster_)), old_image) << "its step comes before slurmctld's in a pass";
  rt_.not_ready = {SackdPodName(cluster_)};  // starting on 26.05
  st = Pass();
  EXPECT_EQ(image_of(SackdPodName(cluster_)), new_image);
  EXPECT_EQ(image_of(LoginPodName(cluster_)), old_image) << "its clients authenticate through sackd";
  EXPECT_EQ(image_of(RestApiPodName(cluster_)), old_image);
  rt_.not_ready.clear();
  st = Pass();
  EXPECT_EQ(image_of(LoginPodName(cluster_)), new_image);
  EXPECT_EQ(image_of(RestApiPodName(cluster_)), new_image);
  EXPECT_EQ(ConditionStatus(st, "Upgrading"), "True") << "the worker still runs 24.11";
  EXPECT_EQ(rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf").find("MetricsType"), std::string::npos);

  // The last 24.11 pod is gone: the files are written for 26.05.
  ASSERT_TRUE(rt_.DeletePod("cpu-0").ok());
  st = Pass();
  EXPECT_EQ(ConditionStatus(st, "Upgrading"), "False");
  conf = rt_.config_maps.at(kConfigMapSlurm).data.at("slurm.conf");
  EXPECT_NE(conf.find("MetricsType=metrics/openmetrics"), std::string::npos) << conf;
  EXPECT_NE(conf.find("HealthCheckTimeout="), std::string::npos) << conf;
}

}  // namespace
}  // namespace hpc::op
