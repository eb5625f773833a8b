// Dataset volumes: a project dataset is root:<project group> 2770 (setgid, so files made in it
// belong to the project's group and nobody outside the group can list, read or write it); a
// cluster-wide dataset is 1777 (every cluster user, the sticky bit keeping each user's files
// theirs). Applied on every call, so a volume made before the rule (or changed by hand) is
// brought back to it.
#pragma once

#include "api/types.h"
#include "common/result.h"
#include "runtime/pod_runtime.h"

namespace hpc::op {

Status EnsureDatasetVolume(runtime::PodRuntime* rt, const api::SlurmCluster& c, const api::Dataset& d);

}  // namespace hpc::op
