// The NVIDIA driver's user-space files for local GPU pods, given as the NVIDIA container toolkit
// gives them to a container: the host driver's tools (nvidia-smi, ...) and libraries (libcuda,
// libnvidia-ml, ...), read-only, where a Debian image looks for them (/usr/bin and
// /usr/lib/<multiarch>, both on the dynamic linker's default path, so no cache or
// LD_LIBRARY_PATH is needed). They must match the host's kernel module, so they come from the
// host, never from an image. An image's /usr is read-only: the files are laid out in a
// directory of the pod's own, which pod init lays over the image's /usr (a read-only overlay).
//
// Where the driver's files live is configurable (GpuHost::driver_root, the environment's
// HPCPLANE_GPU_DRIVER_ROOT), as the toolkit's driver root is: a host whose driver is installed
// under another root, or a test's fake driver.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::runtime::local {

struct DriverFile {
  std::string source;  // host path, symlinks followed
  std::string target;  // its place under the pod's /usr: "bin/nvidia-smi", "lib/x86_64-linux-gnu/libcuda.so.1"
};

// The driver's files under `driver_root` ("/" on most hosts): each tool in usr/bin, and every
// name (versions and links) of each library in the library directories (Debian's multiarch one,
// its nvidia/current, lib64 elsewhere). None where no driver is installed.
std::vector<DriverFile> ListDriverFiles(const std::string& driver_root);

// Lays `files` out under `dir`, made afresh: one copy of each file under its own name (a hard
// link where the same file system allows), and its other names in the same directory as
// symlinks to it.
Status StageDriverFiles(const std::vector<DriverFile>& files, const std::string& dir);

}  // namespace hpc::runtime::local
