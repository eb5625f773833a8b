#include "slurm/health_check.h"

#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <unistd.h>

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

// The GPUs' numbers follow the outcome; a value nvidia-smi did not have is -1, a malformed
// entry is dropped, and the outcome reads as before.
TEST(HealthReportTest, ParsesEachGpusNumbersAfterTheOutcome) {
  auto ok =
      ParseHealthReport("hpcplane-health:1700000000:ok|gpus=00000000:3b:00.0,5,1024,81559,41;00000000:86:00.0,,,,");
  EXPECT_TRUE(ok.present && ok.ok);
  ASSERT_EQ(ok.gpus.size(), 2u);
  EXPECT_EQ(ok.gpus[0].bus_id, "00000000:3b:00.0");
  EXPECT_EQ(ok.gpus[0].utilization_percent, 5);
  EXPECT_EQ(ok.gpus[0].memory_used_mib, 1024);
  EXPECT_EQ(ok.gpus[0].memory_total_mib, 81559);
  EXPECT_EQ(ok.gpus[0].temperature_celsius, 41);
  EXPECT_EQ(ok.gpus[1].utilization_percent, -1);
  EXPECT_EQ(ok.gpus[1].memory_total_mib, -1);
  auto bad = ParseHealthReport(
      "hpcplane-health:1700000001:fail:gpu: GPU 00000000:3b:00.0: 2 uncorrectable ECC "
      "error(s) since the driver loaded|gpus=00000000:3b:00.0,0,0,81559,40;zz,1,2,3,4;1,2,3");
  EXPECT_TRUE(bad.present);
  EXPECT_FALSE(bad.ok);
  EXPECT_EQ(bad.check, "gpu");
  EXPECT_EQ(bad.detail, "GPU 00000000:3b:00.0: 2 uncorrectable ECC error(s) since the driver loaded");
  ASSERT_EQ(bad.gpus.size(), 1u);
  EXPECT_EQ(bad.gpus[0].temperature_celsius, 40);
  EXPECT_FALSE(ParseHealthReport("hpcplane-health:1700000001:maybe|gpus=00000000:3b:00.0,0,0,1,1").present);
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

// A stand-in nvidia-smi for the two queries the check makes, with their field names exactly as
// NVIDIA's `nvidia-smi --help-query-gpu` and `--help-query-remapped-rows` list them (any other
// query fails as nvidia-smi fails on an unknown field): the GPU query prints smi.out and exits
// with smi.rc, the row-remapping query prints rows.out and exits with rows.rc; with smi.hang it
// never answers. A stand-in dmesg prints kmsg; the worker's first process started 1000 s after
// boot.
class GpuHealthCheckTest : public HealthCheckScriptTest {
 protected:
  void SetUp() override {
    HealthCheckScriptTest::SetUp();
    settings_ = HealthCheckConfig(api::HealthChecksSpec{}, {}, true, /*gpus=*/2) + Settings(10) +
                fmt::format("NVIDIA_SMI={0}/bin/nvidia-smi\nSMI_TMP={0}/tmp\n", dir_);
    Fake("nvidia-smi",
         fmt::format("d={}\n"
                     "case \"$*\" in\n"
                     "  *--query-gpu=pci.bus_id,ecc.errors.uncorrected.volatile.total,retired_pages.pending,"
                     "utilization.gpu,memory.used,memory.total,temperature.gpu*)\n"
                     "    [ ! -e $d/smi.hang ] || {{ sleep 30 & echo $! > $d/orphan; exec sleep 30; }}\n"
                     "    cat $d/smi.out; exit $(cat $d/smi.rc) ;;\n"
                     "  *--query-remapped-rows=gpu_bus_id,remapped_rows.pending,remapped_rows.failure*)\n"
                     "    cat $d/rows.out; exit $(cat $d/rows.rc) ;;\n"
                     "  *) echo \"Field in $* is not a valid field to query.\"; exit 2 ;;\n"
                     "esac",
                     dir_));
    Fake("dmesg", fmt::format("cat {}/kmsg", dir_));
    Smi(kTwoGpus);
    Rows(kTwoRows);
    Kmsg("");
    const long ticks = 1000 * sysconf(_SC_CLK_TCK);
    ASSERT_TRUE(
        files::WriteAtomic(dir_ + "/proc/1/stat",
                           fmt::format("1 (slurmd) S 0 1 1 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 {} 0 0\n", ticks))
            .ok());
  }
  void Smi(const std::string& out, int rc = 0) {
    ASSERT_TRUE(files::WriteAtomic(dir_ + "/smi.out", out).ok());
    ASSERT_TRUE(files::WriteAtomic(dir_ + "/smi.rc", std::to_string(rc)).ok());
  }
  void Rows(const std::string& out, int rc = 0) {
    ASSERT_TRUE(files::WriteAtomic(dir_ + "/rows.out", out).ok());
    ASSERT_TRUE(files::WriteAtomic(dir_ + "/rows.rc", std::to_string(rc)).ok());
  }
  void Kmsg(const std::string& text) { ASSERT_TRUE(files::WriteAtomic(dir_ + "/kmsg", text).ok()); }
  // pci.bus_id, ECC, retired pages pending, util, memory used, memory total, temperature.
  static constexpr const char* kTwoGpus =
      "00000000:3B:00.0, 0, No, 87, 40000, 81559, 61\n"
      "00000000:86:00.0, [N/A], [N/A], 0, 1, 81559, 33\n";
  // gpu_bus_id, remapped_rows.pending, remapped_rows.failure.
  static constexpr const char* kTwoRows =
      "00000000:3B:00.0, No, No\n"
      "00000000:86:00.0, 0, 0\n";
};

TEST_F(GpuHealthCheckTest, AHealthyGpuWorkerReportsEachGpusNumbers) {
  auto r = RunAndParse();
  EXPECT_TRUE(r.ok) << r.check << ": " << r.detail;
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].bus_id, "00000000:3b:00.0");
  EXPECT_EQ(r.gpus[0].utilization_percent, 87);
  EXPECT_EQ(r.gpus[0].memory_used_mib, 40000);
  EXPECT_EQ(r.gpus[0].memory_total_mib, 81559);
  EXPECT_EQ(r.gpus[0].temperature_celsius, 61);
  EXPECT_EQ(r.gpus[1].bus_id, "00000000:86:00.0");
  EXPECT_EQ(r.gpus[1].temperature_celsius, 33);
}

// Each fault nvidia-smi shows fails the gpu check with the GPU and what is wrong.
TEST_F(GpuHealthCheckTest, EachFaultNvidiaSmiShowsFailsWithTheGpuNamed) {
  const std::string second = "00000000:86:00.0, 0, No, 0, 1, 81559, 33\n";
  struct Case {
    std::string gpus, rows, detail;
  };
  const std::vector<Case> cases = {
      {"00000000:3B:00.0, 2, No, 87, 40000, 81559, 61\n" + second, kTwoRows,
       "GPU 00000000:3b:00.0: 2 uncorrectable ECC error(s) since the driver loaded"},
      {"00000000:3B:00.0, 0, Yes, 87, 40000, 81559, 61\n" + second, kTwoRows,
       "GPU 00000000:3b:00.0: retired pages wait for a GPU reset"},
      {kTwoGpus, "00000000:3B:00.0, No, No\n00000000:86:00.0, 1, 0\n",
       "GPU 00000000:86:00.0: remapped rows wait for a GPU reset"},
      {kTwoGpus, "00000000:3B:00.0, No, Yes\n00000000:86:00.0, 0, 0\n", "GPU 00000000:3b:00.0: row remapping failed"},
      {second, kTwoRows, "nvidia-smi sees 1 of the 2 GPU(s) this worker declares"},
  };
  for (const auto& c : cases) {
    Smi(c.gpus);
    Rows(c.rows);
    auto r = RunAndParse();
    EXPECT_FALSE(r.ok) << c.gpus << c.rows;
    EXPECT_EQ(r.check, "gpu");
    EXPECT_EQ(r.detail, c.detail);
  }
  // GPUs without row remapping (before A100) fail that query: not checked, no failure.
  Smi(kTwoGpus);
  Rows("Field \"remapped_rows.pending\" is not supported on this GPU\n", 2);
  EXPECT_TRUE(RunAndParse().ok);
  // A GPU fallen off the bus: nvidia-smi fails and says so.
  Smi("Unable to determine the device handle for GPU 00000000:3B:00.0: GPU is lost.  Reboot the system to recover "
      "this GPU\n",
      15);
  auto lost = RunAndParse();
  EXPECT_FALSE(lost.ok);
  EXPECT_EQ(lost.check, "gpu");
  EXPECT_EQ(lost.detail.rfind("nvidia-smi failed (exit 15): Unable to determine the device handle for GPU "
                              "00000000:3B:00.0: GPU is lost.",
                              0),
            0u)
      << lost.detail;
}

// An nvidia-smi that never answers (stuck on a lost GPU) fails the check at the timeout; the
// run reports and ends rather than waiting with the lock held.
TEST_F(GpuHealthCheckTest, AnNvidiaSmiThatNeverAnswersFailsAtTheTimeout) {
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/smi.hang", "").ok());
  auto start = std::chrono::steady_clock::now();
  auto r = RunAndParse();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "gpu");
  EXPECT_EQ(r.detail, "nvidia-smi did not answer within 1s");
  // What it left behind (a stuck nvidia-smi survives its kill) does not hold the check's lock:
  // the next run checks and reports.
  ASSERT_TRUE(files::RemoveAll(dir_ + "/smi.hang").ok());
  auto next = RunAndParse();
  EXPECT_TRUE(next.ok) << next.check << ": " << next.detail;
  const int orphan = std::atoi(files::Read(dir_ + "/orphan").value_or("0").c_str());
  if (orphan > 0) ::kill(orphan, SIGKILL);  // the test's own stand-in
}

// Only an Xid that needs a reset or a reboot, on one of this worker's GPUs, logged since the
// worker started, fails the check.
TEST_F(GpuHealthCheckTest, AnXidOfThisWorkersGpuSinceItStartedFails) {
  std::string kmsg =
      "[  500.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid=123, name=python3, GPU has fallen off the bus.\n"
      "[ 1500.000002] NVRM: Xid (PCI:0000:af:00): 79, pid=124, name=python3, GPU has fallen off the bus.\n"
      "[ 1600.000003] NVRM: Xid (PCI:0000:3b:00): 13, pid=125, name=python3, Graphics Exception\n"
      "[ 1650.000004] eth0: link up\n";
  Kmsg(kmsg);
  auto before = RunAndParse();
  EXPECT_TRUE(before.ok) << before.check << ": " << before.detail;
  Kmsg(kmsg +
       "[ 1700.000005] NVRM: Xid (PCI:0000:86:00): 48, pid=126, name=python3, An uncorrectable double bit "
       "error (DBE) has been detected on GPU in the framebuffer at partition 0.\n");
  auto r = RunAndParse();
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.check, "gpu");
  EXPECT_EQ(r.detail.rfind("GPU 0000:86:00: Xid 48 (An uncorrectable double bit error (DBE) has been detected", 0), 0u)
      << r.detail;
  EXPECT_EQ(r.gpus.size(), 2u);  // the numbers are reported all the same
}

// Without nvidia-smi in the worker nothing can be seen, and nothing is drained for it.
TEST_F(GpuHealthCheckTest, AWorkerWithoutNvidiaSmiIsNotChecked) {
  ASSERT_TRUE(files::RemoveAll(dir_ + "/bin/nvidia-smi").ok());
  auto r = RunAndParse();
  EXPECT_TRUE(r.ok) << r.check << ": " << r.detail;
  EXPECT_TRUE(r.gpus.empty());
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
