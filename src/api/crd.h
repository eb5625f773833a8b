// The CustomResourceDefinitions of hpcplane.io/v1alpha1 (SlurmCluster, NodeSet, Workspace), with
// openAPIV3Schema generated from the same field walks the decoder uses (spec_fields.h): what
// Kubernetes admits has the names and types `hpcplane up -f` accepts. `hpcplane crds` prints
// them; deploy/kubernetes/base/crds.yaml is that output, checked up to date by a test.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace hpc::api {

inline constexpr const char* kGroup = "hpcplane.io";
inline constexpr const char* kVersion = "v1alpha1";

// One CRD object per kind, in a fixed order.
nlohmann::json CustomResourceDefinitions();

// The same, as one multi-document YAML stream.
std::string CustomResourceDefinitionsYaml();

// The schema of one kind's spec alone (for tests): "SlurmCluster", "NodeSet" or "Workspace".
nlohmann::json SpecSchema(const std::string& kind);

}  // namespace hpc::api
