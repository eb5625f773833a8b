// A pod spec as JSON: how a runtime stores the spec it was given (the local runtime in
// pods/NAME/spec.json, the Kubernetes runtime in an annotation of the Pod), so that a restarted
// operator compares a wanted spec with the running one exactly.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "runtime/pod_runtime.h"

namespace hpc::runtime {

nlohmann::json SpecJson(const PodSpec& s);
Result<PodSpec> SpecFromJson(const nlohmann::json& j);

// A network policy as JSON, the same way (the local runtime keeps networkpolicies/NAME.json).
nlohmann::json NetworkPolicyJson(const NetworkPolicy& p);
Result<NetworkPolicy> NetworkPolicyFromJson(const nlohmann::json& j);

}  // namespace hpc::runtime
