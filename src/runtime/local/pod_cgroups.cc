#include "runtime/local/pod_cgroups.h"

#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>
#include <linux/magic.h>

#include "common/files.h"
#include "runtime/local/cpu_sets.h"

namespace hpc::runtime::local {

namespace {

// The v1 hierarchies pods get. Slurm's cgroup/v1 plugin uses freezer (proctrack), cpuset,
// memory and devices (task) and cpuacct (accounting); cpu carries CPU limits; pids is counted.
// The named systemd hierarchy and the hybrid's empty v2 one are there because Slurm tells the
// host's layout by them (without /sys/fs/cgroup/systemd slurmd refuses to start).
constexpr const char* kV1Controllers[] = {"cpu",     "cpuacct", "cpu,cpuacct", "cpuset",  "memory",
                                          "freezer", "devices", "pids",        "systemd", "unified"};
// The controllers a v2 pod gets, enabled from the root down to it.
constexpr const char* kV2Controllers = "+cpu +cpuset +memory +pids";
constexpr int64_t kCpuPeriodUs = 100000;

bool IsDir(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool IsFsType(const std::string& path, int64_t magic) {
  struct statfs fs;
  return ::statfs(path.c_str(), &fs) == 0 && static_cast<int64_t>(fs.f_type) == magic;
}

// Cgroup control files take one write each; an atomic rename is not how they work.
Status WriteControl(const std::string& path, const std::string& value) {
  std::ofstream out(path);
  out << value;
  out.flush();
  if (!out) return Status::Errorf("cgroup: write {} to {}: {}", value, path, std::strerror(errno));
  return Status::Ok();
}

std::string ReadControl(const std::string& path) {
  auto text = files::Read(path);
  if (!text.ok()) return "";
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// A v1 cpuset cgroup starts with no CPUs and no memory nodes, and no process may join it until
// both are set: each new one takes its parent's.
Status InheritCpuset(const std::string& dir) {
  const std::string parent = std::filesystem::path(dir).parent_path().string();
  for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
    if (!ReadControl(dir + "/" + file).empty()) continue;
    RETURN_IF_ERROR(WriteControl(dir + "/" + file, ReadControl(parent + "/" + file)));
  }
  return Status::Ok();
}

Status MakeCgroup(const std::string& dir, bool cpuset) {
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Errorf("cgroup: mkdir {}: {}", dir, std::strerror(errno));
  }
  return cpuset ? InheritCpuset(dir) : Status::Ok();
}

// Removes `dir` and the cgroups below it, deepest first. A cgroup whose last processes are
// still exiting refuses rmdir (EBUSY) for a moment.
Status RemoveCgroupTree(const std::string& dir) {
  if (!IsDir(dir)) return Status::Ok();
  for (const auto& child : files::ListDir(dir)) {
    if (IsDir(dir + "/" + child)) RETURN_IF_ERROR(RemoveCgroupTree(dir + "/" + child));
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (::rmdir(dir.c_str()) != 0) {
    if (errno == ENOENT) return Status::Ok();
    if (errno != EBUSY || std::chrono::steady_clock::now() > deadline) {
      return Status::Errorf("cgroup: rmdir {}: {}", dir, std::strerror(errno));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Status::Ok();
}

int64_t CounterIn(const std::string& text, const std::string& name) {
  std::istringstream in(text);
  std::string key;
  int64_t value = 0;
  while (in >> key >> value) {
    if (key == name) return value;
  }
  return 0;
}

}  // namespace

Status JoinCgroup(const std::string& dir) {
  // "0": the writer itself, whatever its number in the writer's PID namespace.
  return WriteControl(dir + "/cgroup.procs", "0");
}

CgroupHierarchy DetectCgroupHierarchy(const std::string& root) {
  if (IsFsType(root, CGROUP2_SUPER_MAGIC)) return CgroupHierarchy::kV2;
  for (const char* needed : {"memory", "cpuset", "freezer"}) {
    if (!IsFsType(root + "/" + needed, CGROUP_SUPER_MAGIC)) return CgroupHierarchy::kNone;
  }
  return CgroupHierarchy::kV1;
}

PodCgroups::PodCgroups(CgroupHierarchy hierarchy, std::string root, std::string key)
    : hierarchy_(hierarchy), root_(std::move(root)), key_(std::move(key)) {}

std::vector<std::string> PodCgroups::Controllers() const {
  std::vector<std::string> out;
  for (const char* c : kV1Controllers) {
    const std::string dir = root_ + "/" + c;
    if (IsDir(dir) && (IsFsType(dir, CGROUP_SUPER_MAGIC) || IsFsType(dir, CGROUP2_SUPER_MAGIC))) out.push_back(c);
  }
  return out;
}

std::vector<std::string> PodCgroups::ClusterDirs() const {
  switch (hierarchy_) {
    case CgroupHierarchy::kNone:
      return {};
    case CgroupHierarchy::kV2:
      return {root_ + "/hpcplane/" + key_};
    case CgroupHierarchy::kV1:
      break;
  }
  std::vector<std::string> out;
  for (const auto& c : Controllers()) out.push_back(root_ + "/" + c + "/hpcplane/" + key_);
  return out;
}

std::vector<PodCgroupDir> PodCgroups::Dirs(const std::string& pod) const {
  std::vector<PodCgroupDir> out;
  if (hierarchy_ == CgroupHierarchy::kV2) out.push_back({root_ + "/hpcplane/" + key_ + "/" + pod, "/sys/fs/cgroup"});
  if (hierarchy_ != CgroupHierarchy::kV1) return out;
  for (const auto& c : Controllers()) {
    out.push_back({root_ + "/" + c + "/hpcplane/" + key_ + "/" + pod, "/sys/fs/cgroup/" + c});
  }
  // Where the host combines hierarchies (cpu,cpuacct) and links their single names to it, the
  // pod finds the single names too.
  for (const char* c : kV1Controllers) {
    std::error_code ec;
    const std::string link = root_ + "/" + c;
    if (!std::filesystem::is_symlink(link, ec)) continue;
    const std::string target = std::filesystem::read_symlink(link, ec).filename().string();
    if (!ec && IsDir(root_ + "/" + target)) {
      out.push_back({root_ + "/" + target + "/hpcplane/" + key_ + "/" + pod, std::string("/sys/fs/cgroup/") + c});
    }
  }
  return out;
}

std::string PodCgroups::CpusetTop() const {
  return hierarchy_ == CgroupHierarchy::kV2 ? root_ + "/hpcplane" : root_ + "/cpuset/hpcplane";
}

Status PodCgroups::PinCpus(const std::string& dir, int count) const {
  const std::string top = CpusetTop();
  // Pods created at the same moment (a nodeset's workers, another cluster's) choose one at a
  // time, each seeing the others' choice.
  ASSIGN_OR_RETURN(files::FileLock choosing, files::FileLock::Take(top));
  const std::string cluster = top + "/" + key_;
  // cgroup v2 leaves cpuset.cpus empty (inherited) and shows what applies as .effective.
  const char* effective = hierarchy_ == CgroupHierarchy::kV2 ? "/cpuset.cpus.effective" : "/cpuset.cpus";
  ASSIGN_OR_RETURN(std::vector<int> available, ParseCpuList(ReadControl(cluster + effective)));
  if (available.empty() || static_cast<size_t>(count) >= available.size()) return Status::Ok();
  // Pinned already (a restarted pod keeps its CPUs): fewer than the cluster's. A new directory
  // shows none (v2) or all of them (v1, inherited), as does one whose pinning failed before.
  auto own = ParseCpuList(ReadControl(dir + "/cpuset.cpus"));
  if (own.ok() && !own->empty() && own->size() < available.size()) return Status::Ok();
  CpuLoad load;
  for (const auto& other_cluster : files::ListDir(top)) {
    const std::string cdir = top + "/" + other_cluster;
    if (!IsDir(cdir)) continue;
    for (const auto& other_pod : files::ListDir(cdir)) {
      const std::string pdir = cdir + "/" + other_pod;
      if (pdir == dir || !IsDir(pdir)) continue;
      auto cpus = ParseCpuList(ReadControl(pdir + "/cpuset.cpus"));
      if (!cpus.ok() || cpus->empty() || cpus->size() >= available.size()) continue;  // not pinned
      for (int c : *cpus) {
        ++load.all[c];
        if (other_cluster == key_) ++load.siblings[c];
      }
    }
  }
  return WriteControl(dir + "/cpuset.cpus", FormatCpuList(LeastLoadedCpus(available, load, count)));
}

Status PodCgroups::Create(const std::string& pod, const ResourceList& limits, int cpus_to_pin) const {
  if (hierarchy_ == CgroupHierarchy::kNone) return Status::Ok();
  if (hierarchy_ == CgroupHierarchy::kV2) {
    std::string dir = root_;
    for (const std::string& level : {std::string("hpcplane"), key_, pod}) {
      // Controllers reach a cgroup only when its parent enables them for its children.
      RETURN_IF_ERROR(WriteControl(dir + "/cgroup.subtree_control", kV2Controllers));
      dir += "/" + level;
      RETURN_IF_ERROR(MakeCgroup(dir, false));
    }
    if (cpus_to_pin > 0) RETURN_IF_ERROR(PinCpus(dir, cpus_to_pin));
    if (limits.memory_mib > 0) {
      RETURN_IF_ERROR(WriteControl(dir + "/memory.max", std::to_string(limits.memory_mib << 20)));
      RETURN_IF_ERROR(WriteControl(dir + "/memory.swap.max", "0"));
    }
    if (limits.cpus > 0) {
      RETURN_IF_ERROR(WriteControl(dir + "/cpu.max", fmt::format("{} {}", limits.cpus * kCpuPeriodUs, kCpuPeriodUs)));
    }
    return Status::Ok();
  }
  for (const auto& c : Controllers()) {
    const bool cpuset = c == "cpuset";
    std::string dir = root_ + "/" + c;
    for (const std::string& level : {std::string("hpcplane"), key_, pod}) {
      dir += "/" + level;
      RETURN_IF_ERROR(MakeCgroup(dir, cpuset));
    }
    if (cpuset && cpus_to_pin > 0) RETURN_IF_ERROR(PinCpus(dir, cpus_to_pin));
    if (c == "memory" && limits.memory_mib > 0) {
      RETURN_IF_ERROR(WriteControl(dir + "/memory.limit_in_bytes", std::to_string(limits.memory_mib << 20)));
    }
    if ((c == "cpu" || c == "cpu,cpuacct") && limits.cpus > 0) {
      RETURN_IF_ERROR(WriteControl(dir + "/cpu.cfs_period_us", std::to_string(kCpuPeriodUs)));
      RETURN_IF_ERROR(WriteControl(dir + "/cpu.cfs_quota_us", std::to_string(limits.cpus * kCpuPeriodUs)));
    }
  }
  return Status::Ok();
}

int64_t PodCgroups::OomKills(const std::string& pod) const {
  switch (hierarchy_) {
    case CgroupHierarchy::kNone:
      return 0;
    case CgroupHierarchy::kV2:
      return CounterIn(ReadControl(root_ + "/hpcplane/" + key_ + "/" + pod + "/memory.events"), "oom_kill");
    case CgroupHierarchy::kV1:
      break;
  }
  return CounterIn(ReadControl(root_ + "/memory/hpcplane/" + key_ + "/" + pod + "/memory.oom_control"), "oom_kill");
}

Status PodCgroups::Remove(const std::string& pod) const {
  for (const auto& dir : ClusterDirs()) RETURN_IF_ERROR(RemoveCgroupTree(dir + "/" + pod));
  return Status::Ok();
}

Status PodCgroups::RemoveAll() const {
  for (const auto& dir : ClusterDirs()) RETURN_IF_ERROR(RemoveCgroupTree(dir));
  return Status::Ok();
}

}  // namespace hpc::runtime::local
