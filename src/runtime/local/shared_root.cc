#include "runtime/local/shared_root.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/files.h"
#include "common/subprocess.h"

namespace hpc::runtime::local {

Result<std::string> EnsureSharedRoot(const std::string& volume_dir, const std::string& image_root,
                                     const std::string& image_ref) {
  const std::string root = volume_dir + "/rootfs";
  // Written last: a copy interrupted half-way is made again, never used.
  const std::string made_from = volume_dir + "/image";
  if (files::Exists(made_from)) return root;
  const std::string partial = volume_dir + "/rootfs.partial";
  RETURN_IF_ERROR(files::MakeDirs(volume_dir, 0755));
  RETURN_IF_ERROR(files::RemoveAll(partial));
  RETURN_IF_ERROR(files::RemoveAll(root));
  RunOptions o;
  o.timeout = std::chrono::minutes(10);
  RETURN_IF_ERROR(
      RunChecked({"cp", "-a", "--reflink=auto", image_root, partial}, o).WithContext("shared root from " + image_ref));
  if (std::rename(partial.c_str(), root.c_str()) != 0) {
    return Status::Errorf("shared root: rename {}: {}", partial, std::strerror(errno));
  }
  RETURN_IF_ERROR(files::WriteAtomic(made_from, image_ref + "\n", 0644));
  return root;
}

}  // namespace hpc::runtime::local
