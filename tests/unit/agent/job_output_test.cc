// Reading a job's output for the console (job_output.h): the paths as each Slurm source writes
// them, the read command run for real on files here, and the agent's answers on a fake data
// plane for every case the console shows a message for.
#include "agent/job_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "common/subprocess.h"
#include "fakes/fake_data_plane.h"

namespace hpc::cp {
namespace {

using nlohmann::json;

// As `scontrol show job -o` prints it (SLURM_TIME_FORMAT=%s); paths with spaces.
const char* kRunning =
    "JobId=12 JobName=train run UserId=ann(1001) GroupId=ann(1001) MCS_label=N/A Priority=1 Account=astro "
    "JobState=RUNNING Reason=None Dependency=(null) SubmitTime=1700000000 StartTime=1700000005 BatchHost=c1-cpu-0 "
    "Command=/datasets/astro/run me.sh WorkDir=/datasets/astro StdErr=/datasets/astro/err 12.txt StdIn=/dev/null "
    "StdOut=/datasets/astro/out 12.txt Power=\n";

TEST(JobOutput, ScontrolsLineGivesThePathsUserStateAndNode) {
  auto f = slurm::ParseScontrolJob(std::string("JobId=11 UserId=bob(1002) StdOut=/x\n") + kRunning, 12);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->user, "ann");
  EXPECT_EQ(f->submit_time, 1700000000);
  EXPECT_EQ(f->state, "RUNNING");
  EXPECT_EQ(f->node, "c1-cpu-0");
  EXPECT_EQ(f->stdout_path, "/datasets/astro/out 12.txt");
  EXPECT_EQ(f->stderr_path, "/datasets/astro/err 12.txt");
  EXPECT_FALSE(slurm::ParseScontrolJob(kRunning, 1).has_value());
  EXPECT_FALSE(slurm::ParseScontrolJob("slurm_load_jobs error: Invalid job id specified\n", 12).has_value());
}

TEST(JobOutput, SacctsRecordIsMatchedByIdAndSubmitTime) {
  const std::string text =
      "12|1600000000|bob|COMPLETED|c1-cpu-1|/old.out|/old.err\n"
      "12|1700000000|ann|CANCELLED by 1001|c1-cpu-[3-5,9]|/d/a|b.out|/d/e.err\n";
  auto f = slurm::ParseSacctJob(text, 12, 1700000000);
  ASSERT_TRUE(f.has_value());
  EXPECT_EQ(f->user, "ann");
  EXPECT_EQ(f->state, "CANCELLED");
  EXPECT_EQ(f->node, "c1-cpu-3");
  EXPECT_EQ(f->stdout_path, "/d/a|b.out") << "a '|' in the stdout path stays in it; stderr's is split last";
  EXPECT_EQ(f->stderr_path, "/d/e.err");
  EXPECT_FALSE(slurm::ParseSacctJob(text, 12, 1650000000).has_value());
  EXPECT_EQ(slurm::ParseSacctJob("7|1|ann|PENDING|None assigned|/o|/e\n", 7, 1)->node, "");
}

TEST(JobOutput, FirstHostOfAHostList) {
  EXPECT_EQ(slurm::FirstHost("c1-cpu-0"), "c1-cpu-0");
  EXPECT_EQ(slurm::FirstHost("c1-cpu-[3-5,9]"), "c1-cpu-3");
  EXPECT_EQ(slurm::FirstHost("a-1,b-[2-3]"), "a-1");
  EXPECT_EQ(slurm::FirstHost("n[10,12]"), "n10");
}

TEST(JobOutput, AnIncompleteUtf8CharacterAtTheEndIsLeftForTheNextRead) {
  EXPECT_EQ(IncompleteUtf8Tail("abc"), 0u);
  EXPECT_EQ(IncompleteUtf8Tail("a\xC3\xA9"), 0u) << "é complete";
  EXPECT_EQ(IncompleteUtf8Tail("a\xC3"), 1u);
  EXPECT_EQ(IncompleteUtf8Tail("a\xE2\x82"), 2u) << "two of €'s three bytes";
  EXPECT_EQ(IncompleteUtf8Tail("a\xF0\x9F\x98"), 3u);
  EXPECT_EQ(IncompleteUtf8Tail("a\xF0\x9F\x98\x80"), 0u);
  EXPECT_EQ(IncompleteUtf8Tail(""), 0u);
}

class ReadFileCommandTest : public ::testing::Test {
 protected:
  ReadFileCommandTest() {
    dir_ = std::filesystem::temp_directory_path() / ("hpcplane-readfile-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  ~ReadFileCommandTest() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& content) {
    std::ofstream(dir_ / name, std::ios::binary) << content;
    return (dir_ / name).string();
  }
  ProcessResult Run(const std::string& path, int64_t offset, int64_t limit) {
    auto r = RunProcess(ReadFileCommand(path, offset, limit));
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : ProcessResult{};
  }
  std::filesystem::path dir_;
};

TEST_F(ReadFileCommandTest, ReadsAPieceFromAnOffsetOrTheTail) {
  const std::string path = Write("out 1.txt", "0123456789");
  auto piece = ParseReadFileOutput(Run(path, 2, 3).out);
  ASSERT_TRUE(piece.ok());
  EXPECT_EQ(piece->size, 10);
  EXPECT_EQ(piece->offset, 2);
  EXPECT_EQ(piece->data, "234");
  auto tail = ParseReadFileOutput(Run(path, -1, 4).out);
  EXPECT_EQ(tail->offset, 6);
  EXPECT_EQ(tail->data, "6789");
  auto whole = ParseReadFileOutput(Run(path, -1, 100).out);
  EXPECT_EQ(whole->offset, 0);
  EXPECT_EQ(whole->data, "0123456789");
  auto past = ParseReadFileOutput(Run(path, 10, 5).out);
  EXPECT_EQ(past->data, "") << "nothing new yet";
}

TEST_F(ReadFileCommandTest, SaysWhenTheFileIsMissingOrNotARegularReadableFile) {
  EXPECT_EQ(Run((dir_ / "gone").string(), 0, 10).exit_code, 3);
  EXPECT_EQ(Run(dir_.string(), 0, 10).exit_code, 4) << "a directory";
  EXPECT_EQ(Run("/dev/zero", 0, 10).exit_code, 4) << "not a regular file: never read without end";
  EXPECT_EQ(Run("$(touch /tmp/x)", 0, 10).exit_code, 3) << "the path is data, not shell";
}

class ReadJobOutputTest : public ::testing::Test {
 protected:
  ReadJobOutputTest() {
    dp_.cluster = "c1";
    request_.job_id = 12;
    request_.submit_time = 1700000000;
    request_.user = "ann";
    request_.cluster = "c1";
    request_.offset = 0;
    dp_.controller = [this](const std::vector<std::string>& argv) -> Result<std::string> {
      return argv[0] == "scontrol" ? scontrol_ : sacct_;
    };
    dp_.in_pod = [this](const std::string&, const std::vector<std::string>&) -> Result<ProcessResult> { return file_; };
    file_.exit_code = 0;
    file_.out = "11 0\nhello\nwor\xE2\x82";
  }
  json Read() { return ReadJobOutput(&dp_, request_); }
  std::string ErrorCode(const json& answer) { return answer.contains("error") ? answer["error"]["code"] : ""; }

  fakes::FakeDataPlane dp_;
  JobOutputRequest request_;
  Result<std::string> scontrol_ = std::string(kRunning);
  Result<std::string> sacct_ = std::string();
  ProcessResult file_;
};

TEST_F(ReadJobOutputTest, ARunningJobsOutputIsReadOnItsNodeAsItsUser) {
  json a = Read();
  ASSERT_FALSE(a.contains("error")) << a.dump();
  EXPECT_EQ(a["path"], "/datasets/astro/out 12.txt");
  EXPECT_EQ(a["text"], "hello\nwor") << "the € not yet whole is left for the next read";
  EXPECT_EQ(a["nextOffset"], 9);
  EXPECT_EQ(a["size"], 11);
  ASSERT_EQ(dp_.pod_commands.size(), 1u);
  EXPECT_EQ(std::get<0>(dp_.pod_commands[0]), "c1-cpu-0");
  EXPECT_EQ(std::get<1>(dp_.pod_commands[0]), "ann");
  EXPECT_EQ(std::get<2>(dp_.pod_commands[0]), ReadFileCommand("/datasets/astro/out 12.txt", 0, 65536));
  request_.stream = "stderr";
  EXPECT_EQ(Read()["path"], "/datasets/astro/err 12.txt");
}

TEST_F(ReadJobOutputTest, TheFileIsReadInTheFirstPodThatHasIt) {
  dp_.job_pods = {"c1-cpu-0", "ann-astro-login", "c1-login"};
  std::vector<std::string> tried;
  dp_.in_pod = [&](const std::string& pod, const std::vector<std::string>&) -> Result<ProcessResult> {
    tried.push_back(pod);
    ProcessResult r = file_;
    if (pod == "c1-cpu-0") r.exit_code = 3;  // not in the worker's /tmp: on a dataset
    return r;
  };
  json a = Read();
  ASSERT_FALSE(a.contains("error")) << a.dump();
  EXPECT_EQ(tried, (std::vector<std::string>{"c1-cpu-0", "ann-astro-login"}))
      << "the worker first, then the user's workspace login pod; the cluster's login pod not needed";
  tried.clear();
  dp_.in_pod = [&](const std::string& pod, const std::vector<std::string>&) -> Result<ProcessResult> {
    tried.push_back(pod);
    ProcessResult r;
    r.exit_code = 3;
    return r;
  };
  EXPECT_EQ(ErrorCode(Read()), "NotFound");
  EXPECT_EQ(tried.size(), 3u) << "gone only when no pod has it";
  dp_.job_pods = {"c1-cpu-7"};  // neither the job's node nor a login pod
  a = Read();
  EXPECT_EQ(ErrorCode(a), "Unavailable");
  EXPECT_NE(a.dump().find("no login pod runs"), std::string::npos) << a.dump();
}

TEST_F(ReadJobOutputTest, AJobThatLeftSlurmctldIsFoundInSacct) {
  scontrol_ = Status::Errorf("scontrol: exit 1: slurm_load_jobs error: Invalid job id specified");
  sacct_ = std::string("12|1700000000|ann|COMPLETED|c1-cpu-[0-1]|/datasets/astro/slurm-12.out|\n");
  file_.out = "5 0\nbye\n\xC3";
  json a = Read();
  ASSERT_FALSE(a.contains("error")) << a.dump();
  EXPECT_EQ(a["path"], "/datasets/astro/slurm-12.out");
  EXPECT_EQ(a["text"], "bye\n\xC3") << "a finished file's last byte is shown as it is (replaced when sent)";
  request_.stream = "stderr";
  EXPECT_EQ(Read()["sameFile"], true) << "no StdErr of its own: stderr went to stdout's file";
}

TEST_F(ReadJobOutputTest, EachCaseTheConsoleExplainsHasItsCodeAndMessage) {
  auto expect = [&](const char* code, const std::string& words) {
    json a = Read();
    EXPECT_EQ(ErrorCode(a), code) << a.dump();
    EXPECT_NE(a.dump().find(words), std::string::npos) << a.dump();
  };
  file_.exit_code = 3;
  expect("NotFound", "does not exist (any more)");
  file_.exit_code = 4;
  expect("FailedPrecondition", "is not a regular file ann may read");
  file_.exit_code = 0;
  scontrol_ = std::string(R"(JobId=12 UserId=ann(1001) JobState=PENDING SubmitTime=1700000000 StdOut=/x)");
  json pending = Read();  // not an error: the page shows "pending" and follows the job
  EXPECT_FALSE(pending.contains("error")) << pending.dump();
  EXPECT_EQ(pending["written"], false);
  EXPECT_EQ(pending["state"], "PENDING");
  EXPECT_EQ(pending["text"], "");
  scontrol_ = std::string(R"(JobId=12 UserId=ann(1001) JobState=RUNNING SubmitTime=1700000000 BatchHost=n)");
  expect("NotFound", "went to the terminal");
  scontrol_ = std::string(R"(JobId=12 UserId=bob(1002) JobState=RUNNING SubmitTime=1700000000 StdOut=/x)");
  expect("NotFound", "bob's, not ann's");
  scontrol_ = Status::Errorf("scontrol: exit 1: slurm_load_jobs error: Invalid job id specified");
  sacct_ = Status::Errorf("sacct: exit 1: sacct: unrecognized option '--expand-patterns'");
  expect("NotFound", "keeps no output paths");
  sacct_ = std::string();
  expect("NotFound", "no job 12 submitted at 1700000000");
  scontrol_ = Status::Errorf("scontrol: exit 1: Unable to contact slurm controller");
  expect("Unavailable", "slurmctld did not answer");
  request_.cluster = "old";
  expect("NotFound", "no longer runs");
  request_.cluster = "c1";
  request_.user = "root";
  expect("FailedPrecondition", "is not one whose files are read");
  EXPECT_TRUE(dp_.pod_commands.size() <= 2u) << "nothing read once a check failed";
}

TEST(JobOutput, RequestsAndAnswersAreCheckedFieldByField) {
  JobOutputRequest r;
  r.job_id = 5, r.user = "ann", r.cluster = "c1";
  auto back = JobOutputRequestFromJson(ToJson(r));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->offset, -1);
  json bad = ToJson(r);
  bad["limit"] = kMaxJobOutputChunk + 1;
  EXPECT_EQ(JobOutputRequestFromJson(bad).status().field(), "limit");
  bad = ToJson(r);
  bad["stream"] = "stdin";
  EXPECT_EQ(JobOutputRequestFromJson(bad).status().field(), "stream");

  EXPECT_EQ(JobOutputAnswer({{"error", {{"code", "NotFound"}, {"message", "gone"}}}}).status().code(),
            StatusCode::kNotFound);
  EXPECT_EQ(JobOutputAnswer({{"error", {{"code", 7}}}}).status().code(), StatusCode::kUnavailable)
      << "a malformed error is the agent's fault, not the caller's";
  EXPECT_EQ(JobOutputAnswer({{"text", "x"}}).status().code(), StatusCode::kUnavailable);
  json good = {{"path", "/o"}, {"stream", "stdout"}, {"state", "RUNNING"}, {"size", 1},
               {"offset", 0},  {"nextOffset", 1},    {"text", "x"},        {"secret", "dropped"}};
  auto out = JobOutputAnswer(good);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->contains("secret")) << "only the defined fields go to the caller";
  EXPECT_EQ((*out)["written"], true);
  good["written"] = "no";
  EXPECT_EQ(JobOutputAnswer(good).status().code(), StatusCode::kUnavailable) << "a flag that is not a boolean";
}

}  // namespace
}  // namespace hpc::cp
