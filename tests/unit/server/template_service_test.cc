// Job templates on an in-memory store: checked as submissions are, only for a configured
// project, at most kMaxTemplatesPerProject, a replacement said as such, a delete of a missing one
// NotFound; a refused template stores nothing.
#include "server/template_service.h"

#include <gtest/gtest.h>

#include "fakes/fake_controlplane_stores.h"

namespace hpc::cp {
namespace {

using nlohmann::json;

class TemplateServiceTest : public ::testing::Test {
 protected:
  TemplateServiceTest() { stores_.AddProject("astro", "dp1"); }
  fakes::FakeControlPlaneStores stores_;
  TemplateService service_{&stores_, [] { return int64_t{1'800'000'000}; }};
  const json body_ = {
      {"description", "two nodes"}, {"script", "#!/bin/bash\nsrun hostname\n"}, {"options", {{"nodes", 2}}}};
};

TEST_F(TemplateServiceTest, ATemplateIsCreatedThenReplacedUnderItsName) {
  auto made = service_.Put("root-admin", "astro", "two-nodes", body_);
  ASSERT_TRUE(made.ok()) << made.status().message();
  EXPECT_FALSE(made->replaced);
  EXPECT_EQ(made->job_template.updated_by, "root-admin");
  EXPECT_EQ(made->job_template.updated_at, 1'800'000'000);
  json changed = body_;
  changed["options"] = {{"nodes", 4}};
  auto again = service_.Put("root-admin", "astro", "two-nodes", changed);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->replaced);
  EXPECT_EQ(stores_.templates.size(), 1u);
  EXPECT_EQ(stores_.templates["astro/two-nodes"].options["nodes"], 4);
}

TEST_F(TemplateServiceTest, RefusedTemplatesStoreNothing) {
  auto unconfigured = service_.Put("root-admin", "bio", "x", body_);
  EXPECT_EQ(unconfigured.status().code(), StatusCode::kNotFound) << "a typo in the path is not a new project";
  json bad = body_;
  bad["options"] = {{"chdir", "/"}};
  auto refused = service_.Put("root-admin", "astro", "x", bad);
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().field(), "options.chdir");
  EXPECT_TRUE(stores_.templates.empty());
}

TEST_F(TemplateServiceTest, AProjectHoldsAtMostItsLimitButMayStillReplaceOne) {
  for (size_t i = 0; i < kMaxTemplatesPerProject; ++i) {
    ASSERT_TRUE(service_.Put("root-admin", "astro", "t" + std::to_string(i), body_).ok());
  }
  EXPECT_EQ(service_.Put("root-admin", "astro", "one-more", body_).status().code(), StatusCode::kConflict);
  EXPECT_TRUE(service_.Put("root-admin", "astro", "t0", body_).ok()) << "replacing is not adding";
}

TEST_F(TemplateServiceTest, DeletingIsOnceAndAMissingOneIsNotFound) {
  ASSERT_TRUE(service_.Put("root-admin", "astro", "two-nodes", body_).ok());
  EXPECT_TRUE(service_.Delete("astro", "two-nodes").ok());
  EXPECT_EQ(service_.Delete("astro", "two-nodes").code(), StatusCode::kNotFound);
  stores_.unavailable = true;
  EXPECT_EQ(service_.Delete("astro", "x").code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hpc::cp
