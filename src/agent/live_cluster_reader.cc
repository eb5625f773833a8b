#include "agent/live_cluster_reader.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "slurm/health_check.h"

namespace hpc::cp {
namespace {

// %A job id (an array's pending tasks share their array's), %Q priority, %j (last: it may hold
// '|') the name.
constexpr const char* kQueueFormat = "%A|%u|%a|%P|%T|%r|%D|%C|%V|%S|%Q|%j";
constexpr size_t kQueueFields = 12;

int64_t Number(const std::string& s) {
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 18) return 0;
  return std::stoll(s);
}

// Fields of one line: the first kQueueFields - 1 split at '|', the rest is the name.
std::vector<std::string> QueueFields(const std::string& line) {
  std::vector<std::string> f;
  size_t start = 0;
  while (f.size() + 1 < kQueueFields) {
    size_t bar = line.find('|', start);
    if (bar == std::string::npos) break;
    f.push_back(line.substr(start, bar - start));
    start = bar + 1;
  }
  f.push_back(line.substr(start));
  return f;
}

}  // namespace

std::vector<std::string> LivePartitionsCommand() { return {"sinfo", "--noheader", "--format=%R|%a"}; }

Result<std::vector<slurm::SlurmPartition>> ParseLivePartitions(const std::string& output) {
  std::vector<slurm::SlurmPartition> out;
  std::set<std::string> seen;
  std::istringstream in(output);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto bar = line.find('|');
    if (bar == std::string::npos || bar == 0) {
      return Status::Errorf("sinfo line {}: expected \"partition|availability\": \"{}\"", n, line.substr(0, 120));
    }
    std::string name = line.substr(0, bar), state = line.substr(bar + 1);
    std::transform(state.begin(), state.end(), state.begin(), [](unsigned char c) { return std::toupper(c); });
    if (seen.insert(name).second) out.push_back({name, state});
  }
  return out;
}

std::vector<std::string> LiveQueueCommand() {
  return {"env",
          "SLURM_TIME_FORMAT=%s",
          "squeue",
          "--noheader",
          "--states=PENDING,RUNNING,CONFIGURING,COMPLETING,SUSPENDED",
          "--format",
          kQueueFormat};
}

Result<std::vector<LiveJob>> ParseLiveQueue(const std::string& output, int64_t* total) {
  struct Ranked {
    LiveJob job;
    int64_t priority = 0;
  };
  std::vector<Ranked> jobs;
  std::istringstream in(output);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    auto f = QueueFields(line);
    if (f.size() != kQueueFields || Number(f[0]) == 0) {
      return Status::Errorf("squeue line {}: expected {} '|'-separated fields starting with a job id: \"{}\"", n,
                            kQueueFields, line.substr(0, 120));
    }
    Ranked r;
    r.job = {Number(f[0]),
             f[11],
             f[1],
             f[2],
             f[3],
             f[4],
             f[5],
             static_cast<int>(Number(f[6])),
             static_cast<int>(Number(f[7])),
             Number(f[8]),
             Number(f[9])};
    r.priority = Number(f[10]);
    jobs.push_back(std::move(r));
  }
  std::stable_sort(jobs.begin(), jobs.end(), [](const Ranked& a, const Ranked& b) {
    bool a_runs = a.job.state != "PENDING", b_runs = b.job.state != "PENDING";
    if (a_runs != b_runs) return a_runs;
    if (a.priority != b.priority) return a.priority > b.priority;
    return a.job.submit_time < b.job.submit_time;
  });
  *total = static_cast<int64_t>(jobs.size());
  std::vector<LiveJob> out;
  for (size_t i = 0; i < jobs.size() && i < kMaxQueuedJobs; ++i) out.push_back(std::move(jobs[i].job));
  return out;
}

std::vector<LiveController> ParseControllerPing(const std::string& output, const std::string& serving) {
  static const std::regex line_re(R"(^Slurmctld\(([a-z0-9]+)\) at ([a-z][a-z0-9-]{0,62}) is (UP|DOWN)$)");
  std::vector<LiveController> out;
  std::istringstream in(output);
  std::string line;
  std::smatch m;
  while (std::getline(in, line) && out.size() < kMaxLiveControllers) {
    if (!std::regex_match(line, m, line_re)) continue;
    out.push_back({m[2].str(), m[1].str(), m[3].str() == "UP", m[2].str() == serving});
  }
  return out;
}

LiveCluster AssembleLiveCluster(const std::vector<slurm::SlurmNode>& nodes,
                                const std::vector<slurm::SlurmPartition>& partitions, std::vector<LiveJob> queue,
                                int64_t queue_total, std::vector<LiveNodeSet> nodesets, int64_t now) {
  LiveCluster c;
  c.collected_at = now;
  std::set<std::string> nodeset_names;
  for (const auto& s : nodesets) nodeset_names.insert(s.name);
  std::map<std::string, LivePartition> by_partition;
  for (const auto& p : partitions) by_partition[p.name] = {p.name, p.state, 0, 0};
  for (const auto& n : nodes) {
    if (c.nodes.size() == kMaxLiveNodes) break;
    LiveNode v;
    v.name = n.name, v.state = n.state, v.reason = n.reason;
    v.flags.assign(n.flags.begin(), n.flags.end());
    v.cpus = n.cpus, v.cpus_allocated = n.alloc_cpus;
    v.memory_mib = n.memory_mib, v.memory_allocated_mib = n.alloc_memory_mib;
    v.partitions.assign(n.partitions.begin(), n.partitions.end());
    for (const auto& g : slurm::ParseHealthReport(n.extra).gpus) {
      if (v.gpus.size() == kMaxLiveNodeGpus) break;
      v.gpus.push_back({g.bus_id, g.utilization_percent, g.memory_used_mib, g.memory_total_mib, g.temperature_celsius});
    }
    for (const auto& f : n.features) {
      if (nodeset_names.count(f)) v.nodeset = f;
    }
    for (const auto& p : n.partitions) {
      auto it = by_partition.find(p);
      if (it == by_partition.end()) continue;
      it->second.nodes += 1;
      it->second.cpus += n.cpus;
    }
    c.nodes.push_back(std::move(v));
  }
  for (auto& [name, p] : by_partition) c.partitions.push_back(std::move(p));
  c.queue = std::move(queue);
  c.queue_total = queue_total;
  c.nodesets = std::move(nodesets);
  if (c.nodesets.size() > kMaxLiveNodeSets) c.nodesets.resize(kMaxLiveNodeSets);
  return c;
}

}  // namespace hpc::cp
