// Semantic validation of resources. Every error names the object, the field path and why:
//   nodeset "gpu": spec.maxReplicas: must be >= minReplicas (got 2 < 4)
#pragma once

#include <string>

#include "api/types.h"
#include "common/result.h"

namespace hpc::api {

// Linux user names that hpcplane will never map a person to.
bool IsReservedUserName(const std::string& name);
// ^[a-z_][a-z0-9_-]{0,31}$ and not reserved; the error says which rule broke.
Status ValidateUserName(const std::string& name);
// Resource names become pod names, host names and Slurm node names.
Status ValidateResourceName(const std::string& name);
// A workspace's name when its request names none: <slurm user>-<project>, '_' made '-' so the
// name can be a pod and host name. Shared by the data plane and the control plane's records.
std::string DefaultWorkspaceName(const std::string& slurm_user, const std::string& project);

Status Validate(const SlurmCluster& c);
// Checks that need nothing but the nodeset itself.
Status ValidateShape(const NodeSet& n);
// Checks against the cluster the nodeset belongs to (defaults such as minReplicaCount).
Status ValidateAgainstCluster(const NodeSet& n, const SlurmCluster& c);

}  // namespace hpc::api
