// A project's configuration and a launch request become the desired workspace; every refusal
// names the field and the rule.
#include "server/project_config.h"

#include <gtest/gtest.h>

namespace hpc::cp {
namespace {

using nlohmann::json;

ProjectConfig Astro() {
  auto p = ProjectConfigFromJson("astro", {{"dataPlane", "dp1"},
                                           {"tiers", {"small", "medium"}},
                                           {"maxWorkers", 4},
                                           {"tokenLifetime", "2h"},
                                           {"datasets", {"astro", "sky"}}});
  EXPECT_TRUE(p.ok()) << p.status().message();
  return *p;
}

std::string Error(const Result<ProjectConfig>& r) { return r.ok() ? "" : r.status().message(); }
std::string Error(const Result<WorkspaceRecord>& r) { return r.ok() ? "" : r.status().message(); }

TEST(ProjectConfig, DefaultsAndDurations) {
  auto p = ProjectConfigFromJson("bio", {{"dataPlane", "dp2"}});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(p->default_tier, "small");
  EXPECT_EQ(p->tiers, std::vector<std::string>{"small"});
  EXPECT_EQ(p->datasets, std::vector<std::string>{"bio"});
  EXPECT_EQ(p->max_workers, 2);
  EXPECT_EQ(Astro().token_lifetime_seconds, 7200);
  auto seconds = ProjectConfigFromJson("bio", {{"dataPlane", "dp2"}, {"idleTimeout", 90}});
  ASSERT_TRUE(seconds.ok());
  EXPECT_EQ(seconds->idle_timeout_seconds, 90);
}

TEST(ProjectConfig, RefusalsNameTheField) {
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", json::object())).rfind("dataPlane: required", 0), 0u);
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", {{"dataPlane", 7}})), "dataPlane: must be a string");
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", {{"dataPlane", "Bad_Name"}})).rfind("dataPlane: must be 1-20", 0), 0u);
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", {{"dataPlane", "dp"}, {"maxWorkers", 0}})),
            "maxWorkers: must be an integer 1-128");
  EXPECT_EQ(
      Error(ProjectConfigFromJson("bio", {{"dataPlane", "dp"}, {"idleTimeout", "soon"}})).rfind("idleTimeout: ", 0),
      0u);
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", {{"dataPlane", "dp"}, {"tokenLifetime", "1s"}}))
                .rfind("tokenLifetime: must be between", 0),
            0u);
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", {{"dataPlane", "dp"}, {"datasets", {"ok", 3}}})),
            "datasets[1]: must be a string");
  EXPECT_EQ(
      Error(ProjectConfigFromJson("bio", {{"dataPlane", "dp"}, {"sysAdmins", {"root"}}})).rfind("sysAdmins[0]: ", 0),
      0u);
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", {{"dataPlane", "dp"}, {"colour", "red"}})), "colour: unknown field");
  EXPECT_EQ(Error(ProjectConfigFromJson("bio", {{"dataPlane", "dp"}, {"workspaceEnvironment", "../etc"}}))
                .rfind("workspaceEnvironment: must be 1-40", 0),
            0u);
}

// The project names its workspace compute environment; every workspace launched in it runs it,
// and a launch request cannot pick another.
TEST(BuildWorkspace, CarriesTheProjectsWorkspaceEnvironment) {
  auto p = ProjectConfigFromJson("bio", {{"dataPlane", "dp2"}, {"workspaceEnvironment", "workspace-26.05"}});
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(ToJson(*p)["workspaceEnvironment"], "workspace-26.05");
  auto w = BuildWorkspace(*p, "ann", json::object());
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->environment, "workspace-26.05");
  EXPECT_EQ(WorkspaceRecordFromJson(ToJson(*w))->environment, "workspace-26.05");
  EXPECT_EQ(BuildWorkspace(Astro(), "ann", json::object())->environment, "");
  EXPECT_EQ(Error(BuildWorkspace(*p, "ann", {{"environment", "mine"}})), "environment: unknown field");
  // Records stored before environments read as the cluster's own.
  json old = ToJson(*w);
  old.erase("environment");
  EXPECT_EQ(WorkspaceRecordFromJson(old)->environment, "");
}

TEST(BuildWorkspace, FromTheRequestWithinTheProject) {
  auto w = BuildWorkspace(Astro(), "ann", {{"tier", "medium"}, {"maxWorkers", 3}});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ(w->id, "ann-astro");
  EXPECT_EQ(w->data_plane, "dp1");
  EXPECT_EQ(w->tier, "medium");
  EXPECT_EQ(w->max_workers, 3);
  EXPECT_EQ(w->token_lifetime_seconds, 7200);
  EXPECT_EQ(w->datasets, (std::vector<std::string>{"astro", "sky"}));
  EXPECT_FALSE(w->admin);
  EXPECT_EQ(w->desired, "Running");
  EXPECT_EQ(w->phase, "Pending");
  // The default id is USER-PROJECT, with the Slurm name's "_" as "-" (ids are resource names).
  auto defaults = BuildWorkspace(Astro(), "bo_b", json::object());
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(defaults->id, "bo-b-astro");
  EXPECT_EQ(defaults->tier, "small");
  EXPECT_EQ(defaults->max_workers, 4);
  auto round = WorkspaceRecordFromJson(ToJson(*w));
  ASSERT_TRUE(round.ok());
  EXPECT_EQ(ToJson(*round), ToJson(*w));
}

TEST(BuildWorkspace, RefusalsNameTheField) {
  EXPECT_EQ(Error(BuildWorkspace(Astro(), "ann", {{"tier", "gpu"}})),
            "tier: project astro offers small, medium (got \"gpu\")");
  EXPECT_EQ(Error(BuildWorkspace(Astro(), "ann", {{"maxWorkers", 5}})), "maxWorkers: must be an integer 1-4");
  EXPECT_EQ(Error(BuildWorkspace(Astro(), "ann", {{"name", "Not OK"}})).rfind("name: must be 1-20", 0), 0u);
  EXPECT_EQ(Error(BuildWorkspace(Astro(), "ann", {{"cpus", 9}})), "cpus: unknown field");
  EXPECT_EQ(Error(BuildWorkspace(Astro(), "root", json::object())).rfind("user: ", 0), 0u);
  // A default id too long for a resource name says how to choose one.
  EXPECT_NE(Error(BuildWorkspace(Astro(), "averyveryverylongname", json::object())).find("give another with \"name\""),
            std::string::npos);
}

}  // namespace
}  // namespace hpc::cp
