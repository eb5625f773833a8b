#include "operator/dataset_volume.h"

#include "operator/builders.h"

namespace hpc::op {

Status EnsureDatasetVolume(runtime::PodRuntime* rt, const api::SlurmCluster& c, const api::Dataset& d) {
  if (!d.host_path.empty()) return Status::Ok();  // the admin's directory, as it is
  const bool retain = c.spec.retain_volumes_on_delete;
  if (d.group_gid > 0) return rt->EnsureVolume({DatasetVolumeName(d), 0, d.group_gid, 02770, /*shared=*/true, retain});
  return rt->EnsureVolume({DatasetVolumeName(d), 0, 0, 01777, /*shared=*/true, retain});
}

}  // namespace hpc::op
