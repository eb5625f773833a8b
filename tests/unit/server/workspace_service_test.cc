// Launching a workspace from the control plane, on in-memory stores: the project must be
// configured, a user launches for themself (an admin for anyone), the data plane must be Healthy
// with Slurm, an id is never taken from another project or from a live workspace, and the
// record stored carries the user's one uid. A refusal stores nothing.
#include "server/workspace_service.h"

#include <gtest/gtest.h>

#include "fakes/fake_controlplane_stores.h"

namespace hpc::cp {
namespace {

using nlohmann::json;

class WorkspaceServiceTest : public ::testing::Test {
 protected:
  WorkspaceServiceTest() {
    stores_.AddProject("astro", "dp1");
    stores_.AddSlurmDataPlane("dp1", now_);
  }
  Result<WorkspaceRecord> Launch(const json& body, const Principal& caller) {
    return service_.Launch(caller, "astro", body);
  }
  void ExpectRefused(const json& body, const Principal& caller, StatusCode code, const std::string& field) {
    const size_t before = stores_.workspaces.size();
    auto w = Launch(body, caller);
    ASSERT_FALSE(w.ok()) << body.dump();
    EXPECT_EQ(w.status().code(), code) << w.status().message();
    EXPECT_EQ(w.status().field(), field) << w.status().message();
    EXPECT_EQ(stores_.workspaces.size(), before) << "a refused launch stores nothing";
  }

  int64_t now_ = 1'800'000'000;
  fakes::FakeControlPlaneStores stores_;
  WorkspaceService service_{WorkspaceService::Stores{&stores_, &stores_, &stores_}, 15, [this] { return now_; }};
  const Principal ann_{"ann", Role::kUser, {"astro"}};
  const Principal admin_{"root-admin", Role::kAdmin, {}};
};

TEST_F(WorkspaceServiceTest, AUserLaunchesForThemselfAndGetsTheirOneUid) {
  auto w = Launch(json::object(), ann_);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->user, "ann");
  EXPECT_EQ(w->data_plane, "dp1");
  EXPECT_EQ(w->desired, "Running");
  EXPECT_EQ(w->uid, 20000);
  EXPECT_EQ(w->created_at, now_);
  EXPECT_EQ(w->message, "waiting for data plane dp1 to apply it");
  ASSERT_TRUE(stores_.workspaces.count(w->id));
  // Stopped and settled, the same id can be launched again, with the same uid.
  stores_.workspaces[w->id].desired = "Stopped";
  stores_.workspaces[w->id].phase = "Stopped";
  auto again = Launch(json::object(), ann_);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->uid, 20000);
}

TEST_F(WorkspaceServiceTest, OnlyAnAdminLaunchesForSomeoneElse) {
  ExpectRefused({{"user", "bob"}}, ann_, StatusCode::kPermissionDenied, "user");
  ExpectRefused({{"user", 7}}, ann_, StatusCode::kInvalidArgument, "user");
  auto w = Launch({{"user", "bob"}}, admin_);
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->user, "bob");
}

TEST_F(WorkspaceServiceTest, AnUnconfiguredProjectIsNotFoundAndSaysHowToConfigureIt) {
  auto w = service_.Launch(ann_, "bio", json::object());
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kNotFound);
  EXPECT_NE(w.status().message().find("PUT /api/v1/projects/bio"), std::string::npos) << w.status().message();
}

TEST_F(WorkspaceServiceTest, ALiveWorkspaceOrAnotherProjectsIdIsNeverTakenOver) {
  auto first = Launch(json::object(), ann_);
  ASSERT_TRUE(first.ok());
  ExpectRefused(json::object(), ann_, StatusCode::kConflict, "name");
  stores_.workspaces[first->id].project = "bio";
  stores_.workspaces[first->id].desired = "Stopped";
  stores_.workspaces[first->id].phase = "Stopped";
  ExpectRefused(json::object(), ann_, StatusCode::kConflict, "name");
}

TEST_F(WorkspaceServiceTest, TheDataPlaneMustBeHealthyWithSlurm) {
  stores_.data_planes[0].state = "Degraded";
  ExpectRefused(json::object(), ann_, StatusCode::kConflict, "dataPlane");
}

TEST_F(WorkspaceServiceTest, AStoreThatDoesNotAnswerIsUnavailable) {
  stores_.unavailable = true;
  auto w = Launch(json::object(), ann_);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hpc::cp
