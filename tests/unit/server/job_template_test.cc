// A project's job templates: what an admin may store, checked with the rules a submission is
// checked with, and every refusal naming its field.
#include "server/job_template.h"

#include <gtest/gtest.h>

namespace hpc::cp {
namespace {

using nlohmann::json;

std::string Error(const Result<JobTemplate>& r) { return r.ok() ? "" : r.status().message(); }
std::string Field(const Result<JobTemplate>& r) { return r.ok() ? "" : r.status().field(); }

// A template keeps its description, script and options as given.
TEST(JobTemplate, KeepsWhatTheAdminWrote) {
  auto t = JobTemplateFromJson("astro", "mpi-sweep",
                               {{"description", "An MPI sweep over 2 nodes"},
                                {"script", "#!/bin/bash\nsrun hostname\n"},
                                {"options", {{"nodes", 2}, {"time", "00:10:00"}}}});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->project, "astro");
  EXPECT_EQ(t->name, "mpi-sweep");
  EXPECT_EQ(t->description, "An MPI sweep over 2 nodes");
  EXPECT_EQ(t->options["nodes"], 2);
  json shown = ToJson(*t);
  EXPECT_EQ(shown["script"], "#!/bin/bash\nsrun hostname\n");
  EXPECT_EQ(shown["options"]["time"], "00:10:00");
  auto minimal = JobTemplateFromJson("astro", "t", {{"script", "#!/bin/sh\ntrue"}});
  ASSERT_TRUE(minimal.ok());
  EXPECT_TRUE(minimal->options.is_object() && minimal->options.empty());
}

// What a submission would be refused for, a template is refused for, naming the field.
TEST(JobTemplate, RefusalsNameTheField) {
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", json::object())), "script");
  EXPECT_EQ(Error(JobTemplateFromJson("p", "t", {{"script", "echo hi"}})), "script: must start with #!");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh\n" + std::string(70000, 'x')}})), "script");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", std::string("#!/bin/sh\0x", 11)}})), "script");
  EXPECT_EQ(Error(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh"}, {"options", {{"chdir", "/"}}}})),
            "options.chdir: unknown option");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh"}, {"options", {{"mem", "1G --uid=0"}}}})),
            "options.mem");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh"}, {"options", json::array()}})), "options");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh"}, {"description", "a\nb"}})), "description");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh"}, {"description", std::string(501, 'd')}})),
            "description");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh"}, {"owner", "x"}})), "owner");
  EXPECT_EQ(Field(JobTemplateFromJson("p", "t", {{"script", "#!/bin/sh"}, {"name", "other"}})), "name");
  EXPECT_FALSE(JobTemplateFromJson("p", "t", json::array()).ok());
}

// The whitelisted options become sbatch arguments, integers and strings alike.
TEST(SbatchOptions, BecomeArgumentsOneTokenEach) {
  auto args = SbatchArgs({{"jobName", "x"}, {"nodes", 2}});
  ASSERT_TRUE(args.ok());
  EXPECT_EQ(*args, (std::vector<std::string>{"--job-name=x", "--nodes=2"}));
  EXPECT_FALSE(SbatchArgs({{"nodes", true}}).ok());
  EXPECT_FALSE(SbatchArgs({{"jobName", ""}}).ok());
  EXPECT_FALSE(SbatchArgs({{"jobName", "a b"}}).ok());
}

}  // namespace
}  // namespace hpc::cp
