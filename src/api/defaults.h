// Defaults filled into resources after decoding, before validation.
#pragma once

#include <string>

#include "api/types.h"

namespace hpc::api {

void ApplyDefaults(SlurmCluster* c);
// A /24 in 10.192.0.0/10 chosen from the cluster name, so two clusters rarely collide
// by default; clusters meant to run side by side should set spec.network.subnet.
std::string DefaultSubnetFor(const std::string& cluster_name);

}  // namespace hpc::api
