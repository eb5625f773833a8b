// The agent's workspace dispatch against an in-memory data plane: created when missing, stopped
// when the control plane says so (cancelling only when asked), refused when the id belongs to
// someone else, and settled once gone.
#include "agent/workspace_apply.h"

#include <gtest/gtest.h>

#include "fakes/fake_data_plane.h"

namespace hpc::cp {
namespace {

WorkspaceRecord Record(const std::string& desired = "Running") {
  WorkspaceRecord w;
  w.id = "ws-1";
  w.project = "astro";
  w.user = "alice";
  w.uid = 2001;
  w.tier = "small";
  w.max_workers = 2;
  w.environment = "workspace-26.05";
  w.desired = desired;
  return w;
}

TEST(ApplyWorkspaceRecord, CreatesAMissingWorkspaceWithTheControlPlanesUid) {
  fakes::FakeDataPlane dp;
  auto phase = ApplyWorkspaceRecord(dp, Record());
  EXPECT_EQ(phase.phase, "Pending");
  EXPECT_EQ(phase.message, "created on cluster c1");
  ASSERT_EQ(dp.created.size(), 1u);
  EXPECT_EQ(dp.created[0].uid, 2001);
  EXPECT_EQ(dp.created[0].max_workers, 2);
  EXPECT_EQ(dp.created[0].environment, "workspace-26.05");
  // Applied again: nothing is created twice; the data plane's own phase is reported.
  dp.workspaces["ws-1"].status.phase = "Ready";
  dp.workspaces["ws-1"].status.message = "shell: hpcplane workspace shell ws-1";
  phase = ApplyWorkspaceRecord(dp, Record());
  EXPECT_EQ(phase.phase, "Ready");
  EXPECT_EQ(dp.created.size(), 1u);
}

TEST(ApplyWorkspaceRecord, ARefusedCreationIsFailedWithTheReason) {
  fakes::FakeDataPlane dp;
  dp.create_result = Status::InvalidArgument("tier", "no tier \"huge\" on this data plane");
  auto phase = ApplyWorkspaceRecord(dp, Record());
  EXPECT_EQ(phase.phase, "Failed");
  EXPECT_EQ(phase.message, "tier: no tier \"huge\" on this data plane");
}

TEST(ApplyWorkspaceRecord, StopsWaitingForJobsUnlessCancellingIsAsked) {
  fakes::FakeDataPlane dp;
  ApplyWorkspaceRecord(dp, Record());
  auto phase = ApplyWorkspaceRecord(dp, Record("Stopped"));
  EXPECT_EQ(phase.phase, "Stopping");
  EXPECT_TRUE(dp.workspaces["ws-1"].spec.stopping);
  EXPECT_FALSE(dp.workspaces["ws-1"].spec.cancel_jobs);
  auto cancel = Record("Stopped");
  cancel.cancel_jobs = true;
  phase = ApplyWorkspaceRecord(dp, cancel);
  EXPECT_EQ(phase.message, "cancelling its jobs");
  EXPECT_TRUE(dp.workspaces["ws-1"].spec.cancel_jobs);
  // Gone from the data plane: stopped for good, and nothing is created again.
  dp.workspaces.clear();
  phase = ApplyWorkspaceRecord(dp, cancel);
  EXPECT_EQ(phase.phase, "Stopped");
  EXPECT_EQ(dp.created.size(), 1u);
}

TEST(ApplyWorkspaceRecord, AnIdTakenBySomeoneElseIsNeitherChangedNorStopped) {
  fakes::FakeDataPlane dp;
  api::Workspace theirs;
  theirs.metadata.name = "ws-1";
  theirs.spec.user.name = "mallory";
  theirs.spec.project = "astro";
  dp.workspaces["ws-1"] = theirs;
  auto phase = ApplyWorkspaceRecord(dp, Record("Stopped"));
  EXPECT_EQ(phase.phase, "Failed");
  EXPECT_NE(phase.message.find("already exists"), std::string::npos);
  EXPECT_FALSE(dp.workspaces["ws-1"].spec.stopping);
}

}  // namespace
}  // namespace hpc::cp
