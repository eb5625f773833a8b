// Submitting a batch job through the API, on in-memory stores: each check refuses with the code
// and field a client is answered with (400, 403, 409, 503), in the order the API promises, and
// nothing is stored unless every check passed.
#include "server/submission_service.h"

#include <gtest/gtest.h>

#include "fakes/fake_controlplane_stores.h"

namespace hpc::cp {
namespace {

using nlohmann::json;

class SubmissionServiceTest : public ::testing::Test {
 protected:
  SubmissionServiceTest() {
    stores_.flags[kFlagHpcJobs] = true;
    stores_.AddSlurmDataPlane("dp1", now_);
    WorkspaceRecord w;
    w.id = "ann-astro";
    w.project = "astro";
    w.user = "ann";
    w.data_plane = "dp1";
    stores_.workspaces[w.id] = w;
  }
  Result<Submission> Submit(const json& body, const std::string& user = "ann") {
    template_used_.clear();
    return service_.Submit(user, "astro", body, &template_used_);
  }
  // The refusal's code and field; the store holds no submission after it.
  void ExpectRefused(const json& body, StatusCode code, const std::string& field, const std::string& user = "ann") {
    const size_t before = stores_.submissions.size();
    auto sub = Submit(body, user);
    ASSERT_FALSE(sub.ok()) << body.dump();
    EXPECT_EQ(sub.status().code(), code) << sub.status().message();
    EXPECT_EQ(sub.status().field(), field) << sub.status().message();
    EXPECT_EQ(stores_.submissions.size(), before) << "a refused submission is not stored";
  }

  int64_t now_ = 1'800'000'000;
  fakes::FakeControlPlaneStores stores_;
  SubmissionService service_{
      SubmissionService::Stores{&stores_, &stores_, &stores_, &stores_, &stores_},
      SubmissionService::Options{15, [this] { return now_; }, [] { return Result<std::string>(std::string("s1")); }}};
  std::string template_used_;
};

const json kScript = {{"workspace", "ann-astro"}, {"script", "#!/bin/bash\nsrun hostname\n"}};

TEST_F(SubmissionServiceTest, AValidSubmissionIsStoredPendingForTheWorkspacesDataPlane) {
  json body = kScript;
  body["options"] = {{"nodes", 2}, {"jobName", "hello"}};
  auto sub = Submit(body);
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(sub->id, "s1");
  EXPECT_EQ(sub->data_plane, "dp1") << "a control-plane workspace names its data plane";
  EXPECT_EQ(sub->user, "ann");
  EXPECT_EQ(sub->state, "Pending");
  EXPECT_EQ(sub->created_at, now_);
  EXPECT_NE(std::find(sub->sbatch_args.begin(), sub->sbatch_args.end(), "--nodes=2"), sub->sbatch_args.end());
  ASSERT_TRUE(stores_.submissions.count("s1"));
  EXPECT_EQ(stores_.submissions["s1"].script, kScript["script"]);
}

TEST_F(SubmissionServiceTest, TheFlagIsCheckedFirst) {
  stores_.flags[kFlagHpcJobs] = false;
  ExpectRefused(json::object(), StatusCode::kPermissionDenied, "");
  EXPECT_EQ(service_.Enabled().code(), StatusCode::kPermissionDenied);
}

TEST_F(SubmissionServiceTest, TheBodyIsCheckedFieldByField) {
  ExpectRefused({{"script", "#!/bin/bash\n"}}, StatusCode::kInvalidArgument, "workspace");
  ExpectRefused({{"workspace", ""}, {"script", "#!/bin/bash\n"}}, StatusCode::kInvalidArgument, "workspace");
  ExpectRefused({{"workspace", "ann-astro"}, {"script", 7}}, StatusCode::kInvalidArgument, "script");
  ExpectRefused({{"workspace", "ann-astro"}, {"dataPlane", true}, {"script", "#!/bin/bash\n"}},
                StatusCode::kInvalidArgument, "dataPlane");
  ExpectRefused({{"workspace", "ann-astro"}}, StatusCode::kInvalidArgument, "script");
  ExpectRefused({{"workspace", "Not_A_Name"}, {"script", "#!/bin/bash\n"}}, StatusCode::kInvalidArgument, "workspace");
  json bad_option = kScript;
  bad_option["options"] = {{"chdir", "/etc"}};
  ExpectRefused(bad_option, StatusCode::kInvalidArgument, "options.chdir");
}

TEST_F(SubmissionServiceTest, AWorkspaceMustBeTheCallersRunningOneInTheProject) {
  ExpectRefused(kScript, StatusCode::kConflict, "workspace", "bob");
  stores_.workspaces["ann-astro"].desired = "Stopped";
  ExpectRefused(kScript, StatusCode::kConflict, "workspace");
  stores_.workspaces["ann-astro"].desired = "Running";
  json elsewhere = kScript;
  elsewhere["dataPlane"] = "dp2";
  ExpectRefused(elsewhere, StatusCode::kConflict, "workspace");
  // One the control plane did not launch needs its data plane named.
  json unknown = kScript;
  unknown["workspace"] = "ann-local";
  ExpectRefused(unknown, StatusCode::kInvalidArgument, "dataPlane");
  unknown["dataPlane"] = "dp1";
  EXPECT_TRUE(Submit(unknown).ok());
}

TEST_F(SubmissionServiceTest, OnlyAHealthyDataPlaneWithSlurmThatReportedLatelyGetsWork) {
  now_ += 16;  // its last report is older than unreachable_after
  ExpectRefused(kScript, StatusCode::kConflict, "dataPlane");
  now_ -= 16;
  stores_.data_planes[0].component_versions.erase("slurm/slurmctld");
  ExpectRefused(kScript, StatusCode::kConflict, "dataPlane");
}

TEST_F(SubmissionServiceTest, ATemplateGivesWhatTheBodyLeavesOutAndTheBodysOptionsWin) {
  JobTemplate t;
  t.project = "astro";
  t.name = "two-nodes";
  t.script = "#!/bin/bash\nsrun -N2 hostname\n";
  t.options = {{"nodes", 2}, {"time", "00:10:00"}};
  stores_.templates["astro/two-nodes"] = t;
  auto sub = Submit({{"workspace", "ann-astro"}, {"template", "two-nodes"}, {"options", {{"nodes", 1}}}});
  ASSERT_TRUE(sub.ok()) << sub.status().message();
  EXPECT_EQ(template_used_, "two-nodes");
  EXPECT_EQ(sub->script, t.script);
  const auto& args = sub->sbatch_args;
  EXPECT_NE(std::find(args.begin(), args.end(), "--nodes=1"), args.end()) << "the body's option wins";
  EXPECT_NE(std::find(args.begin(), args.end(), "--time=00:10:00"), args.end()) << "the template's fills the rest";
  ExpectRefused({{"workspace", "ann-astro"}, {"template", "nope"}}, StatusCode::kInvalidArgument, "template");
  ExpectRefused({{"workspace", "ann-astro"}, {"template", "two-nodes"}, {"options", "x"}}, StatusCode::kInvalidArgument,
                "options");
}

TEST_F(SubmissionServiceTest, AStoreThatDoesNotAnswerIsUnavailableNotAnInternalError) {
  stores_.unavailable = true;
  auto sub = Submit(kScript);
  ASSERT_FALSE(sub.ok());
  EXPECT_EQ(sub.status().code(), StatusCode::kUnavailable) << "answered 503, never 500";
}

}  // namespace
}  // namespace hpc::cp
