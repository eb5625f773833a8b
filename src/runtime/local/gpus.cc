#include "runtime/local/gpus.h"

#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/files.h"

namespace hpc::runtime::local {
namespace {

// "Device Minor: \t 3" → 3; -1 where the file has no such line.
int MinorIn(const std::string& information) {
  std::istringstream lines(information);
  for (std::string line; std::getline(lines, line);) {
    static const std::string kKey = "Device Minor:";
    if (line.rfind(kKey, 0) != 0) continue;
    const std::string value = line.substr(kKey.size());
    char* end = nullptr;
    const long minor = std::strtol(value.c_str(), &end, 10);
    if (end == value.c_str() || minor < 0 || minor > 1 << 20) return -1;
    return static_cast<int>(minor);
  }
  return -1;
}

bool IsCharDevice(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

// The devices a pod's `gpus` file lists.
std::set<std::string> HeldBy(const std::string& pod_dir) {
  std::set<std::string> held;
  auto text = files::Read(pod_dir + "/gpus");
  if (!text.ok()) return held;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) held.insert(line);
  }
  return held;
}

}  // namespace

GpuHost GpuHost::FromEnvironment() {
  GpuHost host;
  if (const char* proc = std::getenv("HPCPLANE_GPU_PROC_DIR"); proc && *proc) host.proc_dir = proc;
  if (const char* dev = std::getenv("HPCPLANE_GPU_DEV_DIR"); dev && *dev) host.dev_dir = dev;
  if (const char* root = std::getenv("HPCPLANE_GPU_DRIVER_ROOT"); root && *root) host.driver_root = root;
  return host;
}

Result<std::vector<HostGpu>> ListHostGpus(const GpuHost& host) {
  std::vector<HostGpu> gpus;
  for (const auto& bus_id : files::ListDir(host.proc_dir)) {
    HostGpu gpu;
    gpu.bus_id = bus_id;
    gpu.info_dir = host.proc_dir + "/" + bus_id;
    auto information = files::ReadAtMost(gpu.info_dir + "/information", 64 << 10);
    if (!information.ok()) return information.status().WithContext("GPU " + bus_id);
    gpu.minor = MinorIn(*information);
    if (gpu.minor < 0) return Status::Errorf("GPU {}: {}/information names no \"Device Minor:\"", bus_id, gpu.info_dir);
    gpu.device = fmt::format("{}/nvidia{}", host.dev_dir, gpu.minor);
    if (!IsCharDevice(gpu.device)) {
      return Status::Errorf("GPU {}: its device file {} is missing or not a character device", bus_id, gpu.device);
    }
    gpus.push_back(std::move(gpu));
  }
  std::sort(gpus.begin(), gpus.end(), [](const HostGpu& a, const HostGpu& b) { return a.minor < b.minor; });
  return gpus;
}

std::vector<std::string> GpuControlDevices(const GpuHost& host) {
  std::vector<std::string> out;
  for (const char* name : {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools"}) {
    const std::string path = host.dev_dir + "/" + name;
    if (IsCharDevice(path)) out.push_back(path);
  }
  return out;
}

std::string GpuClaims::ClaimFile(const std::string& device) const {
  // One flat name per device path ("/dev/nvidia0" → "%2Fdev%2Fnvidia0").
  std::string name;
  for (char c : device) name += c == '/' ? std::string("%2F") : c == '%' ? std::string("%25") : std::string(1, c);
  return dir_ + "/" + name;
}

Result<std::vector<HostGpu>> GpuClaims::Claim(const std::string& pod_dir, int count,
                                              const std::vector<HostGpu>& host_gpus) const {
  if (count <= 0) return std::vector<HostGpu>{};
  RETURN_IF_ERROR(files::MakeDirs(dir_, 0700));
  // Pods of every cluster on the host choose one at a time, each seeing the others' claims.
  ASSIGN_OR_RETURN(files::FileLock choosing, files::FileLock::Take(dir_));
  const std::set<std::string> mine = HeldBy(pod_dir);
  std::vector<HostGpu> chosen;
  std::map<std::string, std::string> others;  // device → the pod directory that holds it
  // Another pod's live claim wins over this pod's own list: after a reboot (the claims are on
  // tmpfs, pod directories are not) another pod may have claimed a GPU this one listed.
  for (const auto& gpu : host_gpus) {
    auto holder = files::Read(ClaimFile(gpu.device));
    if (holder.ok() && *holder != pod_dir && HeldBy(*holder).count(gpu.device)) {
      others[gpu.device] = *holder;
    } else if (mine.count(gpu.device)) {
      chosen.push_back(gpu);
    }
  }
  if (host_gpus.empty()) return Status::Errorf("needs {} GPU(s): this host's driver shows none", count);
  for (const auto& gpu : host_gpus) {
    if (static_cast<int>(chosen.size()) >= count) break;
    const bool taken =
        std::any_of(chosen.begin(), chosen.end(), [&](const HostGpu& c) { return c.device == gpu.device; });
    if (!taken && !others.count(gpu.device)) chosen.push_back(gpu);
  }
  if (static_cast<int>(chosen.size()) < count) {
    std::string held;
    for (const auto& [device, holder] : others)
      held += fmt::format("{}{} by {}", held.empty() ? "" : ", ", device, holder);
    return Status::Errorf("needs {} GPU(s): {} of the host's {} are free{}", count,
                          static_cast<int>(host_gpus.size() - others.size()), host_gpus.size(),
                          held.empty() ? std::string() : " (held: " + held + ")");
  }
  chosen.resize(static_cast<size_t>(count));
  std::sort(chosen.begin(), chosen.end(), [](const HostGpu& a, const HostGpu& b) { return a.minor < b.minor; });
  // The pod's list first: a claim file is only ever believed where its pod lists the device.
  std::string list;
  for (const auto& gpu : chosen) list += gpu.device + "\n";
  RETURN_IF_ERROR(files::WriteAtomic(pod_dir + "/gpus", list, 0600));
  for (const auto& gpu : chosen) RETURN_IF_ERROR(files::WriteAtomic(ClaimFile(gpu.device), pod_dir, 0600));
  return chosen;
}

Status GpuClaims::Release(const std::string& pod_dir) const {
  const std::set<std::string> held = HeldBy(pod_dir);
  if (held.empty() || !files::Exists(dir_)) return files::RemoveAll(pod_dir + "/gpus");
  ASSIGN_OR_RETURN(files::FileLock choosing, files::FileLock::Take(dir_));
  for (const auto& device : held) {
    auto holder = files::Read(ClaimFile(device));
    if (holder.ok() && *holder == pod_dir) RETURN_IF_ERROR(files::RemoveAll(ClaimFile(device)));
  }
  return files::RemoveAll(pod_dir + "/gpus");
}

}  // namespace hpc::runtime::local
