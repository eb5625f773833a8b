#include "slurm/health_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "common/files.h"
#include "common/subprocess.h"

namespace hpc::slurm {
namespace {

TEST(HealthReportTest, ParsesPassingAndFailingReports) {
  auto ok = ParseHealthReport("hpcplane-health:1700000000:ok");
  EXPECT_TRUE(ok.present);
  EXPECT_TRUE(ok.ok);
  EXPECT_EQ(ok.at, 1700000000);
  auto bad = ParseHealthReport("hpcplane-health:1700000001:fail:tmp: /tmp has 1 MiB free of 16 MiB (6%, needs 10%)");
  EXPECT_TRUE(bad.present);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.check, "tmp");
  EXPECT_EQ(bad.detail, "/tmp has 1 MiB free of 16 MiB (6%, needs 10%)");
}

// An admin's own text in Extra, or anything malformed, is not a report.
TEST(HealthReportTest, AnythingElseIsNoReport) {
  for (const char* extra : {"", "rack 12", "hpcplane-health:", "hpcplane-health:abc:ok", "hpcplane-health:12:maybe",
                            "hpcplane-health:99999999999999999:ok", "hpcplane-health::ok"}) {
    EXPECT_FALSE(ParseHealthReport(extra).present) << extra;
  }
}

// Runs the real check program (bash) against a sandbox: the nodeset's settings point its
// directories into a temp dir, and fakes of scontrol (records the report), munge and sdiag
// stand first on PATH.
class HealthCheckScriptTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *files::MakeTempDir("hpcplane-health");
    for (const char* d : {"bin", "health", "tmp", "spool", "proc", "data"})
      ASSERT_TRUE(files::MakeDirs(dir_ + "/" + d).ok());
    ASSERT_TRUE(files::WriteAtomic(dir_ + "/health_check", HealthCheckScript(), 0755).ok());
    Fake("scontrol", fmt::format("echo \"$@\" >> {}/scontrol.log", dir_));
    Fake("munge", fmt::format("[ ! -e {}/munge-down ]", dir_));
    Fake("sdiag", fmt::format("t=$(cat {}/ctl-time 2>/dev/null || date +%s); echo \"sdiag output at now ($t)\"", dir_));
    AddProcess(1, 0, 0, "slurmd");
    AddProcess(20, 1, 0, "slurmstepd");
    AddProcess(21, 20, 1001, "bash", 4096);  // a job's task: fine
    api::HealthChecksSpec spec;
    settings_ = HealthCheckConfig(spec, {}) + Settings(10);
  }
  void TearDown() override { (void)files::RemoveAll(dir_); }

  void Fake(const std::string& name, const std::string& body) {
    ASSERT_TRUE(files::WriteAtomic(dir_ + "/bin/" + name, "#!/bin/sh\n" + body + "\n", 0755).ok());
  }
  void AddProcess(int pid, int ppid, int uid, const std::string& name, int rss_kib = 0) {
    std::string d = fmt::format("{}/proc/{}", dir_, pid);
    ASSERT_TRUE(files::MakeDirs(d).ok());
    ASSERT_TRUE(files::WriteAtomic(d + "/status", fmt::format("Name:\t{}\nState:\tS (sleeping)\nPPid:\t{}\n"
                                                              "Uid:\t{}\t{}\t{}\t{}\nVmRSS:\t{} kB\n",
                                                              name, ppid, uid, uid, uid, uid, rss_kib))
                    .ok());
  }
  std::string Settings(int min_free) const {
    return fmt::format(
        "MIN_FREE={}\nTMP_DIR={d}/tmp\nSPOOL_DIR={d}/spool\nPROC_DIR={d}/proc\nLOCK_FILE={d}/lock\n"
        "REQUIRE_MOUNTS=0\nTIMEOUT=1\n",
        min_free, fmt::arg("d", dir_));
  }

  // Runs the program for worker cpu-3 and returns the Extra it reported.
  std::string Run(std::map<std::string, std::string> env = {}) {
    EXPECT_TRUE(files::WriteAtomic(dir_ + "/health/cpu.conf", settings_).ok());
    (void)files::RemoveAll(dir_ + "/scontrol.log");
    RunOptions opts;
    opts.timeout = std::chrono::seconds(20);
    opts.extra_env = {{"HPCPLANE_HEALTH_FOREGROUND", "1"},
                      {"HPCPLANE_NODE", "cpu-3"},
                      {"HPCPLANE_HEALTH_DIR", dir_ + "/health"},
                      {"PATH", dir_ + "/bin:/usr/sbin:/usr/bin:/bin"}};
    for (auto& [k, v] : env) opts.extra_env[k] = v;
    auto r = RunProcess({dir_ + "/health_check"}, opts);
    EXPECT_TRUE(r.ok() && r->ok()) << (r.ok() ? r->err : r.status().message());
    auto log = files::Read(dir_ + "/scontrol.log");
    if (!log.ok()) return "";
    const std::string prefix = "update NodeName=cpu-3 Extra=";
    EXPECT_EQ(log->rfind(prefix, 0), 0u) << *log;
    std::string extra = log->substr(prefix.size());
    while (!extra.empty() && extra.back() == '\n') extra.pop_back();
    return extra;
  }
  HealthReport RunAndParse(std::map<std::string, std::string> env = {}) {
    std::string extra = Run(std::move(env));
    HealthReport r = ParseHealthReport(extra);
    EXPECT_TRUE(r.present) << extra;
    return r;
  }

  std::string dir_;
  std::string settings_;
};

TEST_F(HealthCheckScriptTest, AHealthyWorkerReportsOk) {
  auto r = RunAndParse();
  EXPECT_TRUE(r.ok) << r.check << ": " << r.detail;
  EXPECT_NEAR(static_cast<double>(r.at), static_cast<double>(std::time(nullptr)), 5);
}

TEST_F(HealthCheckScriptTest, ScratchBelowTheThresholdFails) {
  settings_ += "MIN_FREE=100\n";  // no real file system is 100% free
  auto r = RunAndParse();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "tmp");
  EXPECT_NE(r.detail.find(dir_ + "/tmp has "), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("needs 100%"), std::string::npos) << r.detail;
}

TEST_F(HealthCheckScriptTest, MungeNotAnsweringFails) {
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/munge-down", "").ok());
  auto r = RunAndParse();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "munge");
}

// With auth/slurm there is no munged to ask; slurmd holds the key itself.
TEST_F(HealthCheckScriptTest, AuthSlurmClustersSkipTheMungeCheck) {
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/munge-down", "").ok());
  settings_ = HealthCheckConfig(api::HealthChecksSpec{}, {}, /*munge=*/false) + Settings(10);
  auto r = RunAndParse();
  EXPECT_TRUE(r.ok) << r.check << ": " << r.detail;
}

TEST_F(HealthCheckScriptTest, AMissingDatasetFails) {
  settings_ += fmt::format("DATASETS=('{0}/data' '{0}/gone')\n", dir_);
  auto r = RunAndParse();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "datasets");
  EXPECT_EQ(r.detail, dir_ + "/gone is not readable or did not answer within 1s");
}

// A user's process outside every job (its parent chain has no slurmstepd) is a stray; one of
// a running job is not.
TEST_F(HealthCheckScriptTest, AUserProcessOutsideAnyJobFails) {
  AddProcess(30, 1, 1002, "python3", 10 * 1024);
  AddProcess(31, 30, 1002, "python3", 5 * 1024);
  AddProcess(32, 1, 1003, "defunct");  // a zombie holds nothing
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/proc/32/status",
                                 "Name:\tdefunct\nState:\tZ (zombie)\nPPid:\t1\nUid:\t1003\t1003\t1003\t1003\n")
                  .ok());
  auto r = RunAndParse();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "processes");
  EXPECT_EQ(r.detail, "2 process(es) of uid 1002 outside any job hold 15 MiB");
}

// The clock is compared with slurmctld's, except after a job (the Epilog has SLURM_JOB_ID).
TEST_F(HealthCheckScriptTest, AClockFarFromSlurmctldsFailsExceptAfterAJob) {
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/ctl-time", std::to_string(std::time(nullptr) - 100)).ok());
  auto r = RunAndParse();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "clock");
  auto after_job = RunAndParse({{"SLURM_JOB_ID", "42"}, {"AFTER_JOB_DELAY", "0"}});
  EXPECT_TRUE(after_job.ok) << after_job.check << ": " << after_job.detail;
}

// An admin's script: a non-zero exit fails with its first line (made safe for slurm), and one
// that hangs is killed at the timeout and fails.
TEST_F(HealthCheckScriptTest, AdminChecksFailOnExitAndOnTimeout) {
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/health/" + HealthCheckScriptKey("cpu", "ecc"),
                                 "#!/bin/sh\necho 'ECC errors: 3; \"x\" `y`'\necho second line\nexit 3\n", 0755)
                  .ok());
  auto r = RunAndParse();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "ecc");
  EXPECT_EQ(r.detail, "exit 3: ECC errors: 3_ _x_ _y_");
  // Another nodeset's scripts are not this worker's.
  ASSERT_TRUE(files::RemoveAll(dir_ + "/health/" + HealthCheckScriptKey("cpu", "ecc")).ok());
  ASSERT_TRUE(
      files::WriteAtomic(dir_ + "/health/" + HealthCheckScriptKey("gpu", "ecc"), "#!/bin/sh\nexit 1\n", 0755).ok());
  EXPECT_TRUE(RunAndParse().ok);
  ASSERT_TRUE(
      files::WriteAtomic(dir_ + "/health/" + HealthCheckScriptKey("cpu", "hang"), "#!/bin/sh\nsleep 30\n", 0755).ok());
  auto start = std::chrono::steady_clock::now();
  auto hung = RunAndParse();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(hung.ok);
  EXPECT_EQ(hung.check, "hang");
  EXPECT_EQ(hung.detail, "did not finish within 1s");
}

// Run by slurmd, the program returns at once and reports from the background: slurmd's start
// and a job's end never wait for the checks.
TEST_F(HealthCheckScriptTest, DetachesFromSlurmd) {
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/health/cpu.conf", settings_).ok());
  ASSERT_TRUE(
      files::WriteAtomic(dir_ + "/health/" + HealthCheckScriptKey("cpu", "slow"), "#!/bin/sh\nsleep 0.5\n", 0755).ok());
  RunOptions opts;
  opts.extra_env = {{"HPCPLANE_NODE", "cpu-3"},
                    {"HPCPLANE_HEALTH_DIR", dir_ + "/health"},
                    {"PATH", dir_ + "/bin:/usr/sbin:/usr/bin:/bin"}};
  auto start = std::chrono::steady_clock::now();
  auto r = RunProcess({dir_ + "/health_check"}, opts);
  ASSERT_TRUE(r.ok() && r->ok());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(450));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!files::Exists(dir_ + "/scontrol.log") && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  auto log = files::Read(dir_ + "/scontrol.log");
  ASSERT_TRUE(log.ok()) << "no report within 10 s";
  EXPECT_NE(log->find("Extra=hpcplane-health:"), std::string::npos) << *log;
}

// slurmd kills the program's process group as soon as the program exits (Slurm's run_command):
// the detached copy still reports, every time. Before the copy waited to lead its own session it
// lost this race nearly always, and at the default 30 s interval no worker ever reported.
TEST_F(HealthCheckScriptTest, ReportsThoughSlurmdKillsItsProcessGroupOnExit) {
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/health/cpu.conf", settings_).ok());
  constexpr int kRuns = 10;
  RunOptions opts;
  opts.timeout = std::chrono::seconds(60);
  opts.extra_env = {{"HPCPLANE_NODE", "cpu-3"},
                    {"HPCPLANE_HEALTH_DIR", dir_ + "/health"},
                    {"PATH", dir_ + "/bin:/usr/sbin:/usr/bin:/bin"}};
  // Job control gives each run a process group of its own, which is killed once it exits. Each
  // run waits for the previous report, since one run at a time holds the lock.
  const std::string slurmd = fmt::format(
      "set -m; for i in $(seq {runs}); do \"{p}\" & pid=$!; wait $pid; kill -TERM -- -$pid 2>/dev/null; "
      "for t in $(seq 100); do [ \"$(wc -l < {d}/scontrol.log 2>/dev/null)\" = \"$i\" ] && break; sleep 0.05; done; "
      "done",
      fmt::arg("runs", kRuns), fmt::arg("p", dir_ + "/health_check"), fmt::arg("d", dir_));
  auto r = RunProcess({"/bin/bash", "-c", slurmd}, opts);
  ASSERT_TRUE(r.ok() && r->ok()) << (r.ok() ? r->err : r.status().message());
  auto log = files::Read(dir_ + "/scontrol.log");
  ASSERT_TRUE(log.ok()) << "no run reported";
  int reports = 0;
  for (size_t at = log->find("Extra=hpcplane-health:"); at != std::string::npos;
       at = log->find("Extra=hpcplane-health:", at + 1)) {
    ++reports;
  }
  EXPECT_EQ(reports, kRuns) << *log;
}

}  // namespace
}  // namespace hpc::slurm
