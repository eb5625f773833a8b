#include "operator/demand.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

namespace hpc::op {

bool IsCapacityReason(const std::string& reason) {
  static const std::set<std::string> capacity = {
      "None",
      "Resources",
      "Priority",
      "PartitionConfig",
      "PartitionNodeLimit",
      "ReqNodeNotAvail",
      "NodeDown",
      "Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions"};
  return capacity.count(reason) > 0;
}

int CountArrayTasks(const std::string& expr_in) {
  std::string expr = expr_in.substr(0, expr_in.find('%'));
  int count = 0;
  size_t start = 0;
  while (start < expr.size()) {
    size_t comma = expr.find(',', start);
    if (comma == std::string::npos) comma = expr.size();
    std::string part = expr.substr(start, comma - start);
    start = comma + 1;
    if (part.empty()) continue;
    size_t colon = part.find(':');  // step: "1-9:2"
    int step = colon == std::string::npos ? 1 : std::max(1, std::atoi(part.substr(colon + 1).c_str()));
    part = part.substr(0, colon);
    size_t dash = part.find('-');
    if (dash == std::string::npos) {
      ++count;
    } else {
      int lo = std::atoi(part.substr(0, dash).c_str()), hi = std::atoi(part.substr(dash + 1).c_str());
      if (hi >= lo) count += (hi - lo) / step + 1;
    }
  }
  return count;
}

namespace {

struct Need {
  int nodes;
  int cpus_per_node;
  int64_t mem_per_node;
  int gpus_per_node;
  bool exclusive;
  int copies;  // array tasks
};

struct Bin {
  int cpus;
  int64_t mem;
  int gpus;
  bool whole;  // taken by an exclusive job
};

}  // namespace

PendingByPartition GroupPending(const std::vector<slurm::SlurmJob>& jobs) {
  PendingByPartition out;
  for (const auto& j : jobs) {
    if (j.state != "PENDING") continue;
    size_t start = 0;
    while (start <= j.partition.size()) {
      size_t comma = j.partition.find(',', start);
      if (comma == std::string::npos) comma = j.partition.size();
      if (comma > start) out[j.partition.substr(start, comma - start)].push_back(&j);
      start = comma + 1;
    }
  }
  return out;
}

Demand ComputeDemand(const std::vector<slurm::SlurmJob>& jobs, const std::string& partition, const NodeShape& shape,
                     int max_nodes, int max_new_nodes) {
  auto grouped = GroupPending(jobs);
  auto it = grouped.find(partition);
  return ComputeDemand(it == grouped.end() ? std::vector<const slurm::SlurmJob*>{} : it->second, shape, max_nodes,
                       max_new_nodes);
}

Demand ComputeDemand(const std::vector<const slurm::SlurmJob*>& jobs, const NodeShape& shape, int max_nodes,
                     int max_new_nodes) {
  Demand d;
  std::vector<Need> needs;
  needs.reserve(jobs.size());
  for (const auto* jp : jobs) {
    const auto& j = *jp;
    // A held job, or one waiting on another job, is not waiting for capacity, whatever reason
    // Slurm shows for it at the moment.
    if (!IsCapacityReason(j.reason) || j.WaitsOnDependency() || j.Held()) {
      ++d.jobs_ignored;
      continue;
    }
    Need n;
    n.nodes = std::max(1, j.node_count);
    n.cpus_per_node = std::max({1, j.min_cpus_per_node, (j.cpus + n.nodes - 1) / n.nodes});
    n.mem_per_node = j.memory_per_node > 0 ? j.memory_per_node : j.memory_per_cpu * n.cpus_per_node;
    n.gpus_per_node = j.gpus_per_node;
    n.exclusive = j.exclusive;
    n.copies = 1;
    if (!j.array_task_string.empty()) {
      n.copies = std::max(1, CountArrayTasks(j.array_task_string));
      if (j.array_max_tasks > 0) n.copies = std::min(n.copies, j.array_max_tasks);
    }
    std::string why;
    if (n.nodes > max_nodes) {
      why = fmt::format("needs {} nodes, the nodeset holds at most {}", n.nodes, max_nodes);
    } else if (n.cpus_per_node > shape.cpus) {
      why = fmt::format("needs {} CPUs per node, a worker has {}", n.cpus_per_node, shape.cpus);
    } else if (n.mem_per_node > shape.memory_mib) {
      why = fmt::format("needs {} MiB per node, a worker has {}", n.mem_per_node, shape.memory_mib);
    } else if (n.gpus_per_node > shape.gpus) {
      why = fmt::format("needs {} GPUs per node, a worker has {}", n.gpus_per_node, shape.gpus);
    }
    if (!why.empty()) {
      d.unfit.push_back({j.job_id, why});
      continue;
    }
    d.jobs_counted += n.copies;
    needs.push_back(n);
  }
  // First fit decreasing: the widest and largest first, each node of a job on a distinct bin.
  std::sort(needs.begin(), needs.end(), [](const Need& a, const Need& b) {
    if (a.exclusive != b.exclusive) return a.exclusive;
    if (a.nodes != b.nodes) return a.nodes > b.nodes;
    return a.cpus_per_node > b.cpus_per_node;
  });
  std::vector<Bin> bins;
  const int limit = std::max(0, max_new_nodes);
  std::vector<size_t> chosen;
  for (const auto& n : needs) {
    for (int copy = 0; copy < n.copies; ++copy) {
      if (static_cast<int>(bins.size()) >= limit) {
        d.nodes_needed = limit;
        return d;
      }
      chosen.clear();
      if (!n.exclusive) {
        for (size_t b = 0; b < bins.size() && static_cast<int>(chosen.size()) < n.nodes; ++b) {
          const Bin& bin = bins[b];
          if (!bin.whole && bin.cpus >= n.cpus_per_node && bin.mem >= n.mem_per_node && bin.gpus >= n.gpus_per_node) {
            chosen.push_back(b);
          }
        }
      }
      for (size_t b : chosen) {
        bins[b].cpus -= n.cpus_per_node;
        bins[b].mem -= n.mem_per_node;
        bins[b].gpus -= n.gpus_per_node;
      }
      for (int missing = n.nodes - static_cast<int>(chosen.size()); missing > 0; --missing) {
        if (n.exclusive) {
          bins.push_back({0, 0, 0, true});
        } else {
          bins.push_back(
              {shape.cpus - n.cpus_per_node, shape.memory_mib - n.mem_per_node, shape.gpus - n.gpus_per_node, false});
        }
      }
    }
  }
  d.nodes_needed = std::min(static_cast<int>(bins.size()), limit);
  return d;
}

int DesiredWorkers(int busy, const Demand& d, int min, int max) {
  return std::clamp(busy + d.nodes_needed, min, std::max(min, max));
}

}  // namespace hpc::op
