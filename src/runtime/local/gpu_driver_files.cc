#include "runtime/local/gpu_driver_files.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>

#include "common/files.h"

namespace hpc::runtime::local {
namespace {

#if defined(__x86_64__)
constexpr const char* kMultiarch = "x86_64-linux-gnu";
#elif defined(__aarch64__)
constexpr const char* kMultiarch = "aarch64-linux-gnu";
#else
constexpr const char* kMultiarch = "";
#endif

// What the toolkit gives a container with the "utility" and "compute" capabilities (the
// default): the management tools and library, CUDA's driver library and its JIT compilers.
constexpr const char* kTools[] = {"nvidia-smi", "nvidia-debugdump", "nvidia-persistenced", "nvidia-cuda-mps-control",
                                  "nvidia-cuda-mps-server"};
constexpr const char* kLibraries[] = {
    "libnvidia-ml",   "libcuda",          "libcudadebugger",   "libnvidia-ptxjitcompiler",
    "libnvidia-nvvm", "libnvidia-opencl", "libnvidia-gpucomp", "libnvidia-allocator",
    "libnvidia-cfg",  "libnvidia-pkcs11"};

// `name` is one of the names of `library`: libcuda.so, libcuda.so.1, libcuda.so.550.54.15.
bool NameOf(const std::string& name, const std::string& library) {
  const std::string base = library + ".so";
  return name == base || name.rfind(base + ".", 0) == 0;
}

// The file a name leads to, or "" where it leads nowhere (a dangling link).
std::string Resolved(const std::filesystem::path& p) {
  std::error_code ec;
  auto real = std::filesystem::canonical(p, ec);
  if (ec || !std::filesystem::is_regular_file(real, ec)) return "";
  return real.string();
}

}  // namespace

std::vector<DriverFile> ListDriverFiles(const std::string& driver_root) {
  namespace fs = std::filesystem;
  const fs::path root = driver_root.empty() ? fs::path("/") : fs::path(driver_root);
  std::vector<DriverFile> out;
  for (const char* tool : kTools) {
    const std::string source = Resolved(root / "usr/bin" / tool);
    if (!source.empty()) out.push_back({source, fmt::format("bin/{}", tool)});
  }
  const std::string multiarch = kMultiarch;
  if (multiarch.empty()) return out;
  const std::string lib_dir = fmt::format("lib/{}", multiarch);
  std::set<std::string> named;  // the first directory holding a name wins
  const std::vector<std::string> dirs = {fmt::format("usr/lib/{}", multiarch),
                                         fmt::format("usr/lib/{}/nvidia/current", multiarch),
                                         fmt::format("lib/{}", multiarch), "usr/lib64", "usr/lib"};
  for (const auto& dir : dirs) {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(root / dir, ec)) {
      const std::string name = entry.path().filename().string();
      bool wanted = false;
      for (const char* lib : kLibraries) wanted = wanted || NameOf(name, lib);
      if (!wanted || named.count(name)) continue;
      const std::string source = Resolved(entry.path());
      if (source.empty()) continue;
      named.insert(name);
      out.push_back({source, lib_dir + "/" + name});
    }
  }
  return out;
}

Status StageDriverFiles(const std::vector<DriverFile>& files, const std::string& dir) {
  namespace fs = std::filesystem;
  RETURN_IF_ERROR(files::RemoveAll(dir));
  RETURN_IF_ERROR(files::MakeDirs(dir, 0755));
  // A file is staged under its own name (libcuda.so.550.54.15), its other names (libcuda.so.1)
  // link to it: the names that are the file's own come first.
  std::vector<DriverFile> ordered = files;
  std::stable_sort(ordered.begin(), ordered.end(), [](const DriverFile& a, const DriverFile& b) {
    auto own = [](const DriverFile& f) { return fs::path(f.target).filename() == fs::path(f.source).filename(); };
    return own(a) && !own(b);
  });
  // (target directory, source) → the name the file was staged under there.
  std::map<std::pair<std::string, std::string>, std::string> staged;
  for (const auto& f : ordered) {
    const fs::path target = fs::path(dir) / f.target;
    const std::string parent = target.parent_path().string();
    RETURN_IF_ERROR(files::MakeDirs(parent, 0755));
    auto [it, first] = staged.try_emplace({parent, f.source}, target.filename().string());
    if (!first) {
      if (::symlink(it->second.c_str(), target.c_str()) != 0)
        return Status::Errorf("symlink {}: {}", target.string(), std::strerror(errno));
      continue;
    }
    if (::link(f.source.c_str(), target.c_str()) == 0) continue;
    std::error_code ec;
    fs::copy_file(f.source, target, ec);
    if (ec) return Status::Errorf("copy the driver's {} to {}: {}", f.source, target.string(), ec.message());
    fs::permissions(target, fs::status(f.source, ec).permissions(), ec);
  }
  return Status::Ok();
}

}  // namespace hpc::runtime::local
