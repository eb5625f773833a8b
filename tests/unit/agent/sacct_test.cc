// sacct output parsing and job record encoding.
#include <gtest/gtest.h>

#include "agent/sacct.h"
#include "messages/job_record.h"

namespace hpc::cp {
namespace {

TEST(Sacct, FoldsStepsIntoTheirJobWithTheLargestRss) {
  const std::string out =
      "demo|7|train|ann|astro|ann-astro|COMPLETED|0:0|1700000000|1700000005|1700000065|60|01:02.500||1|ann-astro-0|"
      "billing=1,cpu=1,mem=1024M,node=1|7\n"
      "demo|7.batch|batch||astro||COMPLETED|0:0|1700000005|1700000005|1700000065|60|01:02.500|91620K|1|ann-astro-0|cpu="
      "1|"
      "7.batch\n"
      "demo|7.0|python||astro||COMPLETED|0:0|1700000006|1700000006|1700000060|54|00:50|2G|1|ann-astro-0|cpu=1|7.0\n"
      "demo|8|x|ann|astro|ann-astro|CANCELLED by 20000|0:15|1700000100|0|1700000101|0|00:00:00||0|None assigned||8\n";
  auto jobs = ParseSacct(out, "dp1");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 2u);
  const auto& a = (*jobs)[0];
  EXPECT_EQ(a.data_plane, "dp1");
  EXPECT_EQ(a.cluster, "demo");
  EXPECT_EQ(a.job_id, 7);
  EXPECT_EQ(a.user, "ann");
  EXPECT_EQ(a.project, "astro");
  EXPECT_EQ(a.partition, "ann-astro");
  EXPECT_EQ(a.submit_time, 1700000000);
  EXPECT_EQ(a.elapsed_seconds, 60);
  EXPECT_EQ(a.cpu_seconds, 62);
  EXPECT_EQ(a.max_rss_kib, 2 * 1024 * 1024);
  EXPECT_EQ(a.tres, "billing=1,cpu=1,mem=1024M,node=1");
  const auto& b = (*jobs)[1];
  EXPECT_EQ(b.state, "CANCELLED");
  EXPECT_EQ(b.node_list, "");
  EXPECT_EQ(b.nodes, 0);
  EXPECT_EQ(a.array_job_id, 0) << "not an array task";
  EXPECT_EQ(a.array_task, "");
}

// Array tasks keep their own job id (JobIDRaw) and name their array (JobID 12_3); a step of a
// task folds into the task.
TEST(Sacct, ArrayTasksNameTheirArray) {
  const std::string out =
      "demo|12|sweep|ann|astro|ann-astro|COMPLETED|0:0|1700000000|1700000001|1700000011|10|00:01||1|w-0|cpu=1|12_0\n"
      "demo|13|sweep|ann|astro|ann-astro|COMPLETED|0:0|1700000000|1700000002|1700000012|10|00:01||1|w-1|cpu=1|12_1\n"
      "demo|13.batch|batch||astro||COMPLETED|0:0|1700000002|1700000002|1700000012|10|00:01|4M|1|w-1|cpu=1|12_1.batch\n"
      "demo|14|sweep|ann|astro|ann-astro|PENDING|0:0|1700000000|0|0|0|00:00||0|None assigned||12_[2-9]\n";
  auto jobs = ParseSacct(out, "dp1");
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].job_id, 12);
  EXPECT_EQ((*jobs)[0].array_job_id, 12);
  EXPECT_EQ((*jobs)[0].array_task, "0");
  EXPECT_EQ((*jobs)[1].job_id, 13);
  EXPECT_EQ((*jobs)[1].array_job_id, 12);
  EXPECT_EQ((*jobs)[1].array_task, "1");
  EXPECT_EQ((*jobs)[1].max_rss_kib, 4096);
  EXPECT_EQ((*jobs)[2].array_task, "[2-9]") << "tasks not started yet, as one record";
  // Carried through the API's JSON and the CSV export.
  auto back = JobRecordFromJson(ToJson((*jobs)[1]));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->array_job_id, 12);
  EXPECT_EQ(back->array_task, "1");
  EXPECT_NE(ToCsvLine((*jobs)[1]).find(",12,1\n"), std::string::npos) << ToCsvLine((*jobs)[1]);
}

TEST(Sacct, MalformedOutputIsAnErrorNamingTheLine) {
  auto r = ParseSacct("demo|1|x\n", "dp1");
  EXPECT_NE(r.status().message().find("line 1"), std::string::npos);
  auto id = ParseSacct("demo|abc|x|u|a|p|S|0:0|1|1|1|1|0:0||1|n|t|abc\n", "dp1");
  EXPECT_NE(id.status().message().find("not a number"), std::string::npos);
  EXPECT_TRUE(ParseSacct("", "dp1")->empty());
}

TEST(Sacct, Durations) {
  EXPECT_EQ(ParseSlurmDuration("1-02:03:04.5"), 86400 + 7384);
  EXPECT_EQ(ParseSlurmDuration("03:04.500"), 184);
  EXPECT_EQ(ParseSlurmDuration(""), 0);
}

TEST(Sacct, WindowIsBoundedAndAllUsers) {
  auto args = SacctWindowArgs(1700000000, 1700000600);
  std::string joined;
  for (const auto& a : args) joined += a + " ";
  EXPECT_NE(joined.find("--starttime="), std::string::npos);
  EXPECT_NE(joined.find("--endtime="), std::string::npos);
  EXPECT_NE(joined.find("--allusers"), std::string::npos);
  EXPECT_NE(joined.find("--duplicates"), std::string::npos);
  EXPECT_EQ(joined.find("--state"), std::string::npos);
  // Held-then-cancelled jobs only show up when a state is named: a second query.
  auto cancelled = SacctWindowArgs(1700000000, 1700000600, true);
  EXPECT_EQ(cancelled.back(), "--state=CA");
}

TEST(JobRecord, JsonRoundTripAndFieldErrors) {
  JobRecord r;
  r.cluster = "c";
  r.job_id = 5;
  r.submit_time = 9;
  r.user = "ann";
  r.state = "COMPLETED";
  r.tres = "cpu=1,mem=1G";
  auto back = JobRecordFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(ToJson(*back), ToJson(r));
  nlohmann::json bad = ToJson(r);
  bad["jobId"] = "5";
  auto refused = JobRecordFromJson(bad);
  ASSERT_FALSE(refused.ok()) << "accepted a string job id";
  EXPECT_EQ(refused.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(refused.status().field(), "jobId");
  EXPECT_EQ(refused.status().message(), "jobId: must be an integer");
  EXPECT_EQ(refused.status().InField("jobs[3]").message(), "jobs[3].jobId: must be an integer");
  EXPECT_EQ(refused.status().InField("jobs[3]").field(), "jobs[3].jobId");
  bad = ToJson(r);
  bad.erase("user");
  EXPECT_EQ(JobRecordFromJson(bad).status().field(), "user");
  EXPECT_EQ(ToCsvLine(r).find("\"cpu=1,mem=1G\""), ToCsvLine(r).rfind("\"cpu=1,mem=1G\""));
  EXPECT_NE(ToCsvLine(r).find("\"cpu=1,mem=1G\""), std::string::npos);
}

}  // namespace
}  // namespace hpc::cp
