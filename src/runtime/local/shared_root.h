// A shared root ("jail"): one copy of an image's root file system, in a volume, that several
// pods take their system directories from (pod_init.h), so what is installed there once is in
// every one of them at once.
#pragma once

#include <string>

#include "common/result.h"

namespace hpc::runtime::local {

// The shared root in `volume_dir`, made from `image_root` (image `image_ref`) on first use and
// kept from then on, whatever is installed into it or becomes of the image. Returns its root.
Result<std::string> EnsureSharedRoot(const std::string& volume_dir, const std::string& image_root,
                                     const std::string& image_ref);

}  // namespace hpc::runtime::local
