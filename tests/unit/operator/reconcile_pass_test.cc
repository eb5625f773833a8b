// One reconcile pass on fakes (store, runtime, Slurm): its phases in order, what it saves, when
// it says converged and idle, and what it does when the store fails (nothing made when the specs
// cannot be read; unconverged, and the rest still done, when a status cannot be written).
#include "operator/reconcile_pass.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fakes/fake_pod_runtime.h"
#include "fakes/fake_reconcile_store.h"
#include "fakes/fake_slurm.h"
#include "operator/conditions.h"
#include "operator/dataset_volume.h"
#include "operator/workspace.h"

namespace hpc::op {
namespace {

class ReconcilePassTest : public ::testing::Test {
 protected:
  ReconcilePassTest() {
    api::SlurmCluster c;
    c.metadata.name = "c1";
    c.spec.accounting.enabled = false;
    store_.cluster = c;
    dir_ = std::filesystem::temp_directory_path() / ("hpcplane-pass-test-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    BuildInputs inputs;
    inputs.mysql = {105, 105};
    ctl_.rt = &rt_;
    ctl_.cluster = std::make_unique<ClusterReconciler>(
        &rt_, inputs, [this](const std::string&, int) { return std::make_unique<fakes::ForwardingReader>(&slurm_); },
        &slurm_);
    ctl_.nodesets = std::make_unique<NodeSetReconciler>(&rt_, inputs, &slurm_);
    ctl_.workspaces = std::make_unique<WorkspaceReconciler>(&rt_, inputs, &slurm_);
    ctl_.accounting = std::make_unique<AccountingSync>(&rt_, "c1-controller");
    auto ledger = OwnershipLedger::Open((dir_ / "owned.json").string());
    EXPECT_TRUE(ledger.ok()) << ledger.status().message();
    ctl_.ledger = std::make_unique<OwnershipLedger>(std::move(*ledger));
    // squeue in the controller pod: the queue the test's FakeSlurm holds is empty.
    rt_.exec_handler = [](const std::string&, const runtime::ExecOptions& o) {
      ProcessResult r;
      r.exit_code = 0;
      if (!o.argv.empty() && o.argv[0] == "squeue") r.out = "";  // an empty queue
      return r;
    };
  }
  ~ReconcilePassTest() override { std::filesystem::remove_all(dir_); }

  void AddPinnedNodeSet(const std::string& name, int replicas) {
    api::NodeSet ns;
    ns.metadata.name = name;
    ns.spec.cluster = "c1";
    ns.spec.replicas = replicas;
    ns.spec.max_replicas = replicas;
    store_.nodesets.push_back(ns);
  }
  // Slurm lists each of the nodeset's workers as a registered idle node.
  void RegisterWorkers(const std::string& nodeset, int n) {
    for (int i = 0; i < n; ++i) {
      slurm::SlurmNode node;
      node.name = nodeset + "-" + std::to_string(i);
      node.state = "idle";
      node.cpus = 1;
      node.features = {nodeset};
      node.last_busy = std::time(nullptr);
      slurm_.nodes.push_back(node);
    }
  }
  PassOutcome Pass() { return ReconcileOnce(store_, ctl_, nullptr); }
  // Passes until one converges (at most `max`); the number it took, or -1.
  int PassesToConverge(int max = 10) {
    for (int i = 1; i <= max; ++i) {
      if (Pass().converged) return i;
    }
    return -1;
  }
  std::string ClusterReady() const {
    if (!store_.cluster_status) return "";
    const auto* c = FindCondition(store_.cluster_status->conditions, "Ready");
    return c ? c->status : "";
  }

  fakes::FakeReconcileStore store_;
  fakes::FakePodRuntime rt_;
  fakes::FakeSlurm slurm_;
  ClusterControllers ctl_;
  std::filesystem::path dir_;
};

TEST_F(ReconcilePassTest, AStoreThatCannotBeReadEndsThePassBeforeAnythingIsMade) {
  store_.read_error = Status::Unavailable("disk gone");
  PassOutcome out = Pass();
  EXPECT_FALSE(out.converged);
  EXPECT_FALSE(out.idle) << "nothing was asked of Slurm";
  EXPECT_TRUE(rt_.pods.empty()) << "no pod without a spec read";
  EXPECT_TRUE(rt_.secrets.empty());
  EXPECT_FALSE(store_.cluster_status.has_value()) << "no status without a spec read";
}

TEST_F(ReconcilePassTest, AFreshClusterIsBuiltStepByStepAndItsStatusSaved) {
  rt_.not_ready.insert(MungePodName(*store_.cluster));
  PassOutcome out = Pass();
  EXPECT_FALSE(out.converged);
  EXPECT_TRUE(rt_.pods.count(MungePodName(*store_.cluster)));
  EXPECT_FALSE(rt_.pods.count(ControllerPodName(*store_.cluster))) << "munge comes first";
  EXPECT_EQ(ClusterReady(), "False");
}

TEST_F(ReconcilePassTest, ConvergesWhenTheClusterIsReadyAndEveryNodeSetHasItsWorkers) {
  AddPinnedNodeSet("cpu", 2);
  RegisterWorkers("cpu", 2);
  ASSERT_GT(PassesToConverge(), 0) << "cluster: " << ClusterReady();
  EXPECT_EQ(ClusterReady(), "True");
  ASSERT_TRUE(store_.nodeset_status.count("cpu"));
  EXPECT_EQ(store_.nodeset_status["cpu"].replicas, 2);
  EXPECT_TRUE(rt_.pods.count("cpu-0") && rt_.pods.count("cpu-1"));
  PassOutcome out = Pass();
  EXPECT_TRUE(out.converged);
  EXPECT_TRUE(out.idle) << "Slurm answered with an empty queue";
  // Health reports are read at least every health check interval while workers run.
  ASSERT_TRUE(out.duty_in.has_value());
  EXPECT_EQ(out.duty_in->count(), store_.cluster->spec.health_checks.interval_seconds);
}

TEST_F(ReconcilePassTest, AStatusTheStoreRefusesLeavesThePassUnconvergedAndTheRestDone) {
  AddPinnedNodeSet("cpu", 1);
  RegisterWorkers("cpu", 1);
  ASSERT_GT(PassesToConverge(), 0);
  store_.write_error = Status::Unavailable("store is read-only");
  // Nothing changed but the statuses could not be written: not converged, so the next pass comes
  // soon and writes them.
  PassOutcome out = Pass();
  EXPECT_FALSE(out.converged) << "a status that was not saved must be written again soon";
  EXPECT_GE(store_.refused_writes, 2) << "the cluster's and the nodeset's status were tried";
  // A new nodeset appears while statuses cannot be written: its workers are still made.
  AddPinnedNodeSet("gpu", 1);
  Pass();
  EXPECT_TRUE(rt_.pods.count("gpu-0")) << "the nodesets phase ran after the cluster phase's refused save";
  EXPECT_FALSE(store_.nodeset_status.count("gpu"));

  store_.write_error = Status::Ok();
  RegisterWorkers("gpu", 1);
  EXPECT_GT(PassesToConverge(), 0);
  EXPECT_TRUE(store_.nodeset_status.count("gpu"));
}

TEST_F(ReconcilePassTest, WorkersOfANodeSetGoneFromTheStoreAreRemoved) {
  AddPinnedNodeSet("cpu", 1);
  AddPinnedNodeSet("old", 1);
  RegisterWorkers("cpu", 1);
  RegisterWorkers("old", 1);
  ASSERT_GT(PassesToConverge(), 0);
  ASSERT_TRUE(rt_.pods.count("old-0"));
  store_.nodesets.pop_back();
  // Drained in Slurm first (hpcplane's own reason), deleted once Slurm shows it drained and empty.
  for (int i = 0; i < 5 && rt_.pods.count("old-0"); ++i) {
    Pass();
    for (auto& n : slurm_.nodes) {
      if (n.name == "old-0" && slurm_.Called("drain old-0")) {
        n.flags.insert("DRAIN");
        n.reason = "hpcplane:scale-down";
      }
    }
  }
  EXPECT_TRUE(slurm_.Called("drain old-0"));
  EXPECT_FALSE(rt_.pods.count("old-0")) << "the orphaned worker is gone";
  EXPECT_TRUE(rt_.pods.count("cpu-0")) << "the stored nodeset's worker stays";
}

TEST_F(ReconcilePassTest, NothingIsRemovedWhileSlurmCannotBeRead) {
  AddPinnedNodeSet("cpu", 1);
  AddPinnedNodeSet("old", 1);
  RegisterWorkers("cpu", 1);
  RegisterWorkers("old", 1);
  ASSERT_GT(PassesToConverge(), 0);
  store_.nodesets.pop_back();
  slurm_.reachable = false;
  for (int i = 0; i < 3; ++i) Pass();
  EXPECT_TRUE(rt_.pods.count("old-0")) << "fail closed: no deletion without Slurm's state";
  EXPECT_FALSE(slurm_.Called("drain old-0"));
}

// Seen on the real cluster: a dataset volume made for a workspace stayed owned by the
// SlurmCluster after the workspace stopped, and `retainOnDelete` set later never reached it
// (deleting the cluster would have deleted the project's data). Recorded when made, it follows
// the cluster's storage policy for as long as it exists.
TEST_F(ReconcilePassTest, AStoppedWorkspacesDatasetKeepsFollowingTheClustersStoragePolicy) {
  api::Workspace w;
  w.metadata.name = "ann-astro";
  w.spec.cluster = "c1";
  w.spec.user = {"ann", 3001, 3001, false, ""};
  w.spec.project = "astro";
  w.spec.datasets = {"astro"};
  w.spec.dataset_gids = {{"astro", 60100}};
  store_.workspaces = {w};
  Pass();
  const std::string volume = DatasetVolumeName(WorkspaceDataset(w, "astro"));
  ASSERT_TRUE(rt_.volumes.count(volume));
  EXPECT_EQ(rt_.volumes[volume], 02770u);
  EXPECT_FALSE(rt_.retained[volume]);
  store_.workspaces.clear();  // stopped and removed
  store_.cluster->spec.retain_volumes_on_delete = true;
  Pass();
  EXPECT_TRUE(rt_.retained[volume]) << "the dataset follows retainOnDelete without its workspace";
  EXPECT_EQ(rt_.volumes[volume], 02770u) << "with its group";
  // The record outlives the daemon: a new ledger on the same file holds it.
  auto reopened = OwnershipLedger::Open((dir_ / "owned.json").string());
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ(reopened->datasets(), (std::map<std::string, int64_t>{{"astro", 60100}}));
}

// Seen on Kubernetes, where a kubelet updates the controller pod's users file up to a minute
// after its ConfigMap: an association made before slurmctld could resolve its user kept no uid,
// and that user's jobs ran under no account (no project in the control plane). Associations
// wait until the controller pod has the users' file.
TEST_F(ReconcilePassTest, AssociationsWaitUntilTheControllerPodHasTheUsersFile) {
  store_.cluster->spec.accounting.enabled = true;
  store_.cluster->spec.users = {{"alice", 2001, 2001, false, ""}};
  bool propagated = false;
  rt_.exec_handler = [&](const std::string&, const runtime::ExecOptions& o) {
    ProcessResult r;
    r.exit_code = 0;
    if (!o.argv.empty() && o.argv[0] == "squeue") r.out = "";  // an empty queue
    if (!o.argv.empty() && o.argv[0] == "cmp") r.exit_code = propagated ? 0 : 1;
    return r;
  };
  auto added_alice = [&] {
    return std::any_of(rt_.execs.begin(), rt_.execs.end(), [](const auto& call) {
      const auto& a = call.opts.argv;
      return !a.empty() && a[0] == "sacctmgr" && std::find(a.begin(), a.end(), "add") != a.end() &&
             std::find(a.begin(), a.end(), "user") != a.end() && std::find(a.begin(), a.end(), "alice") != a.end();
    });
  };
  for (int i = 0; i < 6; ++i) Pass();
  ASSERT_EQ(ClusterReady(), "True");
  EXPECT_FALSE(added_alice()) << "no association before slurmctld can resolve alice";
  propagated = true;
  Pass();
  EXPECT_TRUE(added_alice());
}

}  // namespace
}  // namespace hpc::op
