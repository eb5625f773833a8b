// CPU sets for local pods: the host's CPUs a pod that asks for N CPUs is pinned to.
//
// A worker pod that asks for N CPUs gets N of the host's as its cpuset (as Kubernetes' static
// CPU manager gives a Guaranteed pod), so its jobs run there and not where every other worker's
// do. They are the CPUs least used by its own cluster's pinned pods (a cluster's workers, and
// the ranks of one MPI job, on distinct CPUs while the host has them), then by all pinned pods
// on the host; where pods ask for more CPUs than the host has, they share. CPUs are chosen by
// number, once, when the pod is made: two may be hyperthreads of one core, memory nodes are
// not chosen, and nothing is rebalanced when other pods go.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::runtime::local {

// "0-3,8,10-11" (the kernel's cpu list format) → {0,1,2,3,8,10,11}; "" → {}.
Result<std::vector<int>> ParseCpuList(const std::string& text);
// {0,1,2,3,8} → "0-3,8".
std::string FormatCpuList(std::vector<int> cpus);

// How many pinned pods each CPU carries: of the pod's own cluster, and in all.
struct CpuLoad {
  std::map<int, int> siblings;
  std::map<int, int> all;
};

// `count` CPUs out of `available`, those carrying the fewest of the cluster's pinned pods first,
// then the fewest pinned pods, then the lower number; all of `available` when it has no more
// than `count`. Sorted.
std::vector<int> LeastLoadedCpus(const std::vector<int>& available, const CpuLoad& load, int count);

}  // namespace hpc::runtime::local
