// Local pods' cgroups: where a pod's processes are accounted, where its CPU and memory limits
// are enforced by the kernel, and, for a pod that delegates (PodSpec::delegate_cgroups:
// slurmd), the subtree it manages itself to confine each job.
//
// Layout, one directory per pod below a directory per cluster (`key`: the cluster's network key):
//   cgroup v1: <root>/<controller>/hpcplane/<key>/<pod> for every mounted controller hierarchy;
//   cgroup v2: <root>/hpcplane/<key>/<pod>, with the controllers enabled down to it.
// Inside the pod, /sys/fs/cgroup shows exactly the pod's own directories (nothing of the host's
// hierarchy), read-only unless the pod delegates, as a container with a cgroup namespace sees it.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "runtime/pod_runtime.h"

namespace hpc::runtime::local {

enum class CgroupHierarchy { kNone, kV1, kV2 };

// Which hierarchy `root` (normally /sys/fs/cgroup) holds: a cgroup2 mount (v2), a tmpfs of v1
// controller mounts with at least memory, cpuset and freezer (v1), or neither.
CgroupHierarchy DetectCgroupHierarchy(const std::string& root = "/sys/fs/cgroup");

// One of a pod's cgroup directories and where the pod sees it: "/sys/fs/cgroup/<controller>"
// (v1) or "/sys/fs/cgroup" (v2).
struct PodCgroupDir {
  std::string host_dir;
  std::string pod_path;
};

// Moves the calling process into the cgroup directory `dir` (its children follow it).
Status JoinCgroup(const std::string& dir);

class PodCgroups {
 public:
  PodCgroups(CgroupHierarchy hierarchy, std::string root, std::string key);

  CgroupHierarchy hierarchy() const { return hierarchy_; }
  /** Creates the pod's directories unless they exist and sets its limits: memory
   *  (limits.memory_mib) and CPU time (limits.cpus). A pod that asks for `cpus_to_pin` CPUs
   *  gets that many of the host's as its cpuset (cpu_sets.h), unless the host has no more. A
   *  restarted pod keeps its directories and its CPUs: an exec still ending in them must not
   *  hold up the restart. */
  Status Create(const std::string& pod, const ResourceList& limits, int cpus_to_pin = 0) const;
  /** The pod's directories; empty when the host has no usable hierarchy. */
  std::vector<PodCgroupDir> Dirs(const std::string& pod) const;
  /** How many times the kernel's OOM killer has killed a process of the pod's cgroup. */
  int64_t OomKills(const std::string& pod) const;
  /** Removes the pod's directories and everything it created below them (empty by then: its
   *  processes are gone). Waits briefly for exiting processes to leave. */
  Status Remove(const std::string& pod) const;
  /** Removes the cluster's directory; what a crash left behind of its pods included. */
  Status RemoveAll() const;

 private:
  // The cluster's directory in each hierarchy (v1: one per controller; v2: one).
  std::vector<std::string> ClusterDirs() const;
  std::vector<std::string> Controllers() const;  // v1 hierarchies' names, e.g. "memory"
  // Where every cluster's cpuset directories are: <root>/cpuset/hpcplane (v1), <root>/hpcplane.
  std::string CpusetTop() const;
  // Writes `count` of the cluster's CPUs, the least used by pinned pods, to the pod directory
  // `dir`'s cpuset, unless it holds pinned CPUs already; nothing where the cluster has no more
  // than `count`.
  Status PinCpus(const std::string& dir, int count) const;

  CgroupHierarchy hierarchy_;
  std::string root_;
  std::string key_;
};

}  // namespace hpc::runtime::local
