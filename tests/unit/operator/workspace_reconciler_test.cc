// The workspace reconciler against fakes: launching (key, token, login pod, accounting) and the
// stop sequence: jobs first, then workers, then the partition, and the record goes only once
// Slurm no longer lists the partition.
#include "operator/workspace_reconciler.h"

#include <gtest/gtest.h>

#include "fakes/fake_pod_runtime.h"
#include "fakes/fake_slurm.h"
#include "operator/workspace.h"

namespace hpc::op {
namespace {

api::Workspace Stopping() {
  api::Workspace w;
  w.metadata.name = "ann-astro";
  w.spec.cluster = "demo";
  w.spec.user = {"ann", 20000, 20000, false, ""};
  w.spec.project = "astro";
  w.spec.tier = "small";
  w.spec.resources = {2, 2048, 0};
  w.spec.max_workers = 3;
  w.spec.stopping = true;
  return w;
}

class WorkspaceStop : public ::testing::Test {
 protected:
  WorkspaceOutcome Pass(const api::Workspace& w) { return rec_.Reconcile(cluster_, w, view_); }
  fakes::FakePodRuntime rt_;
  fakes::FakeSlurm slurm_;
  WorkspaceReconciler rec_{&rt_, BuildInputs{}, &slurm_};
  api::SlurmCluster cluster_;
  WorkspaceView view_;
  std::vector<slurm::SlurmJob> jobs_;
  std::vector<slurm::SlurmNode> nodes_;
  std::vector<std::string> partitions_ = {"batch", "ann-astro"};
  api::NodeSetStatus nodeset_;
};

TEST_F(WorkspaceStop, NothingIsRemovedWhileSlurmsJobListIsUnknown) {
  auto out = Pass(Stopping());
  EXPECT_FALSE(out.remove);
  EXPECT_FALSE(out.status.released);
  EXPECT_EQ(out.status.message, "waiting: Slurm's job list is unavailable, nothing is removed until it is");
}

// Guards `workspace stop` returning about a second before Slurm stopped listing the partition.
TEST_F(WorkspaceStop, TheRecordGoesOnlyOnceSlurmNoLongerListsThePartition) {
  view_.jobs = &jobs_;
  view_.nodes = &nodes_;
  view_.nodeset = &nodeset_;
  nodeset_.replicas = 1;
  auto w = Stopping();
  auto out = Pass(w);
  EXPECT_FALSE(out.status.released);
  EXPECT_EQ(out.status.message, "removing workers (1 pods, 0 Slurm nodes left)");
  nodeset_.replicas = 0;
  // Workers gone: released, but Slurm's partition list is not known yet.
  out = Pass(w);
  EXPECT_TRUE(out.status.released);
  EXPECT_FALSE(out.remove);
  w.status = out.status;
  view_.partitions = &partitions_;
  out = Pass(w);
  EXPECT_FALSE(out.remove);
  EXPECT_EQ(out.status.message, "removing partition ann-astro");
  partitions_ = {"batch"};
  out = Pass(w);
  EXPECT_TRUE(out.remove);
  EXPECT_EQ(out.status.message, "stopped");
}

TEST_F(WorkspaceStop, RunningJobsKeepEverythingUnlessCancelled) {
  slurm::SlurmJob j;
  j.partition = "ann-astro";
  j.state = "RUNNING";
  jobs_.push_back(j);
  view_.jobs = &jobs_;
  view_.nodes = &nodes_;
  view_.partitions = &partitions_;
  auto out = Pass(Stopping());
  EXPECT_FALSE(out.remove);
  EXPECT_FALSE(out.status.released);
  EXPECT_EQ(out.status.active_jobs, 1);
  EXPECT_TRUE(slurm_.calls.empty());
  auto cancel = Stopping();
  cancel.spec.cancel_jobs = true;
  out = Pass(cancel);
  EXPECT_FALSE(out.remove);
  ASSERT_EQ(slurm_.calls.size(), 1u);
  EXPECT_EQ(slurm_.calls[0], "cancel ann-astro");
}

}  // namespace
}  // namespace hpc::op

namespace hpc::op {
namespace {

// Launching: the token needs the cluster's JWT key, the login pod its token, Ready the pod and
// the user's association; each wait says what it waits for, and nothing is made twice.
class WorkspaceRun : public ::testing::Test {
 protected:
  WorkspaceRun() {
    w_ = Stopping();
    w_.spec.stopping = false;
  }
  WorkspaceOutcome Pass() { return rec_->Reconcile(cluster_, w_, view_); }
  std::unique_ptr<WorkspaceReconciler> NewReconciler() {
    return std::make_unique<WorkspaceReconciler>(&rt_, BuildInputs{}, &slurm_);
  }
  fakes::FakePodRuntime rt_;
  fakes::FakeSlurm slurm_;
  std::unique_ptr<WorkspaceReconciler> rec_ = NewReconciler();
  api::SlurmCluster cluster_;
  api::Workspace w_;
  WorkspaceView view_;
};

TEST_F(WorkspaceRun, WaitsForTheKeyThenItsLoginPodThenAccounting) {
  auto out = Pass();
  EXPECT_EQ(out.status.phase, "Pending");
  EXPECT_EQ(out.status.message, "waiting for the cluster's JWT key");
  EXPECT_TRUE(rt_.pods.empty()) << "no login pod without its token";

  rt_.secrets[kSecretJwt] = {kSecretJwt, {{"jwt_hs256.key", std::string(32, 'k')}}, 0, 0};
  const std::string login = WorkspaceLoginPodName(w_);
  rt_.not_ready.insert(login);
  out = Pass();
  EXPECT_EQ(out.status.message, "waiting for login pod " + login);
  ASSERT_TRUE(rt_.pods.count(login));
  EXPECT_EQ(rt_.pods.at(login).uid, 20000) << "the login pod runs as the user, never root";
  const auto& token = rt_.secrets.at(WorkspaceTokenSecretName(w_));
  EXPECT_EQ(token.owner_uid, 20000);
  EXPECT_GT(out.status.token_expires, 0);

  rt_.not_ready.clear();
  view_.accounting_ready = false;
  out = Pass();
  EXPECT_EQ(out.status.message, "waiting for accounting to know user ann");
  view_.accounting_ready = true;
  out = Pass();
  EXPECT_EQ(out.status.phase, "Ready");
  EXPECT_EQ(rt_.created, std::vector<std::string>{login});
}

// A daemon restarted with the workspace running keeps its token (users' shells hold it) and its
// login pod (users' sessions run in it).
TEST_F(WorkspaceRun, AReconcilerAfterACrashKeepsTheTokenAndTheLoginPod) {
  rt_.secrets[kSecretJwt] = {kSecretJwt, {{"jwt_hs256.key", std::string(32, 'k')}}, 0, 0};
  ASSERT_EQ(Pass().status.phase, "Ready");
  const auto token = rt_.secrets.at(WorkspaceTokenSecretName(w_)).data.at("token");
  rec_ = NewReconciler();
  EXPECT_EQ(Pass().status.phase, "Ready");
  EXPECT_EQ(rt_.secrets.at(WorkspaceTokenSecretName(w_)).data.at("token"), token);
  EXPECT_EQ(rt_.created.size(), 1u);
  EXPECT_TRUE(rt_.deleted.empty());
}

}  // namespace
}  // namespace hpc::op
