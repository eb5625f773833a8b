// GPUs for local pods, given as the NVIDIA container toolkit gives them to a container: a pod
// that asks for N GPUs (PodSpec resources.limits.gpus) gets N of the host's, held by no other
// pod of any cluster on the host, their device files in its /dev (with the driver's control
// devices), and the driver's list of GPUs (/proc/driver/nvidia/gpus) showing only them. So
// slurmd's AutoDetect=nvidia (gres.conf) finds exactly its worker's GPUs, and Slurm sets
// CUDA_VISIBLE_DEVICES and confines each job to the GPUs it was given.
//
// Where the driver shows its GPUs is configurable (GpuHost), so that tests (and hosts with
// another layout) can point at their own: the environment's HPCPLANE_GPU_PROC_DIR and
// HPCPLANE_GPU_DEV_DIR. The driver's tools and libraries go in too (gpu_driver_files.h).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::runtime::local {

// Where this host's NVIDIA driver shows its GPUs.
struct GpuHost {
  // One directory per GPU, named by its PCI bus id, holding `information` ("Device Minor: N").
  std::string proc_dir = "/proc/driver/nvidia/gpus";
  // The device files: nvidia<minor> per GPU, and the driver's nvidiactl, nvidia-uvm,
  // nvidia-uvm-tools where they exist.
  std::string dev_dir = "/dev";
  // The root the driver's user-space files are installed under (gpu_driver_files.h).
  std::string driver_root = "/";

  // The defaults, or HPCPLANE_GPU_PROC_DIR, HPCPLANE_GPU_DEV_DIR and HPCPLANE_GPU_DRIVER_ROOT
  // where set.
  static GpuHost FromEnvironment();
};

struct HostGpu {
  std::string bus_id;    // "0000:19:00.0": its directory under GpuHost::proc_dir
  int minor = -1;        // its device file: nvidia<minor>
  std::string device;    // host path of that file
  std::string info_dir;  // host path of its directory under proc_dir
};

// The host's GPUs, by minor number; none where proc_dir does not exist. A GPU whose
// `information` names no minor, or whose device file is missing, is an error that says which.
Result<std::vector<HostGpu>> ListHostGpus(const GpuHost& host);

// The driver's control devices that exist on the host (host paths), for every pod with GPUs.
std::vector<std::string> GpuControlDevices(const GpuHost& host);

// Which pod holds which GPU, for every cluster on the host: one file per claimed GPU in `dir`,
// naming the pod directory that holds it; that directory's `gpus` file lists the devices the
// pod holds. A claim whose pod directory no longer lists the device (the pod was deleted, or its
// daemon died mid-way) is free again.
class GpuClaims {
 public:
  explicit GpuClaims(std::string dir) : dir_(std::move(dir)) {}

  // `count` GPUs of `host_gpus` for the pod whose directory is `pod_dir`: the ones it holds
  // already (a restarted pod keeps its GPUs), else free ones, lowest minor first. Fewer free
  // than `count` is an error naming how many are free and who holds the rest; nothing is
  // claimed then.
  Result<std::vector<HostGpu>> Claim(const std::string& pod_dir, int count,
                                     const std::vector<HostGpu>& host_gpus) const;
  // Frees what the pod holds. Nothing held is no error.
  Status Release(const std::string& pod_dir) const;

 private:
  std::string ClaimFile(const std::string& device) const;
  std::string dir_;
};

// The host-wide claims directory.
inline constexpr const char* kGpuClaimsDir = "/run/hpcplane/gpu-claims";

}  // namespace hpc::runtime::local
