#include "agent/sacct.h"

#include <charconv>
#include <ctime>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "slurm/sizes.h"

namespace hpc::cp {
namespace {

constexpr const char* kFields =
    "Cluster,JobIDRaw,JobName,User,Account,Partition,State,ExitCode,Submit,Start,End,ElapsedRaw,TotalCPU,MaxRSS,"
    "NNodes,NodeList,AllocTRES,JobID";
constexpr size_t kFieldCount = 18;

std::vector<std::string> SplitPipe(const std::string& line) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t bar = line.find('|', start);
    out.push_back(line.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
    if (bar == std::string::npos) return out;
    start = bar + 1;
  }
}

// A whole non-negative number; 0 for anything else, including one too large for int64 (what
// sacct prints is trusted no further than that: job names in the same lines are users').
int64_t Num(const std::string& s) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return 0;
  return v;
}

}  // namespace

std::string SacctTime(int64_t t) {
  // sacct takes local wall-clock times; the agent runs beside the cluster, in its time zone.
  std::time_t tt = t;
  std::tm tm{};
  ::localtime_r(&tt, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  return buf;
}

std::vector<std::string> SacctWindowArgs(int64_t start, int64_t end, bool cancelled_only) {
  std::vector<std::string> args = {"sacct",
                                   "--allusers",
                                   "--duplicates",
                                   "--parsable2",
                                   "--noheader",
                                   "--noconvert",
                                   "--starttime=" + SacctTime(start),
                                   "--endtime=" + SacctTime(end),
                                   std::string("--format=") + kFields};
  // Without --state sacct leaves out jobs that never became eligible (held, then cancelled);
  // naming every state instead changes which records it returns for jobs that did run, so
  // cancelled jobs are read by a second query.
  if (cancelled_only) args.push_back("--state=CA");
  return args;
}

int64_t ParseSlurmDuration(const std::string& s) {
  if (s.empty()) return 0;
  int64_t days = 0;
  std::string rest = s;
  if (auto dash = rest.find('-'); dash != std::string::npos) {
    days = Num(rest.substr(0, dash));
    rest = rest.substr(dash + 1);
  }
  if (auto dot = rest.find('.'); dot != std::string::npos) rest = rest.substr(0, dot);
  std::vector<int64_t> parts;
  std::stringstream in(rest);
  std::string p;
  while (std::getline(in, p, ':')) parts.push_back(Num(p));
  // Overflowing values are garbage, not durations: 0 like any other unreadable field.
  int64_t secs = 0;
  for (int64_t v : parts) {
    if (__builtin_mul_overflow(secs, 60, &secs) || __builtin_add_overflow(secs, v, &secs)) return 0;
  }
  int64_t total = 0;
  if (__builtin_mul_overflow(days, 86400, &total) || __builtin_add_overflow(total, secs, &total)) return 0;
  return total;
}

Result<std::vector<JobRecord>> ParseSacct(const std::string& output, const std::string& data_plane) {
  std::vector<JobRecord> jobs;
  // (job id, submit) of each allocation line, so its steps (which follow it) fold into it.
  std::map<int64_t, size_t> latest;
  std::istringstream in(output);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    auto f = SplitPipe(line);
    if (f.size() != kFieldCount) {
      return Status::Errorf("sacct output line {}: {} fields, expected {}", n, f.size(), kFieldCount);
    }
    const std::string& id = f[1];
    auto dot = id.find('.');
    if (dot != std::string::npos) {
      // A step: 123.batch, 123.0, 123.extern.
      auto it = latest.find(Num(id.substr(0, dot)));
      if (it != latest.end()) {
        auto& j = jobs[it->second];
        j.max_rss_kib = std::max(j.max_rss_kib, slurm::ParseSlurmSizeKiB(f[13]));
      }
      continue;
    }
    if (Num(id) == 0) return Status::Errorf("sacct output line {}: job id \"{}\" is not a number", n, id);
    JobRecord j;
    j.data_plane = data_plane;
    j.cluster = f[0];
    j.job_id = Num(id);
    j.name = f[2];
    j.user = f[3];
    j.project = f[4];
    j.partition = f[5];
    j.state = f[6].substr(0, f[6].find(' '));  // "CANCELLED by 2001"
    j.exit_code = f[7];
    j.submit_time = Num(f[8]);
    j.start_time = Num(f[9]);
    j.end_time = Num(f[10]);
    j.elapsed_seconds = Num(f[11]);
    j.cpu_seconds = ParseSlurmDuration(f[12]);
    j.max_rss_kib = slurm::ParseSlurmSizeKiB(f[13]);
    j.nodes = static_cast<int>(Num(f[14]));
    j.node_list = f[15] == "None assigned" ? "" : f[15];
    j.tres = f[16];
    // JobID shows an array task as <array job id>_<task index> (JobIDRaw is the task's own id).
    if (auto bar = f[17].find('_'); bar != std::string::npos && Num(f[17].substr(0, bar)) > 0) {
      j.array_job_id = Num(f[17].substr(0, bar));
      j.array_task = f[17].substr(bar + 1);
    }
    latest[j.job_id] = jobs.size();
    jobs.push_back(std::move(j));
  }
  return jobs;
}

}  // namespace hpc::cp
