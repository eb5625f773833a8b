// Reading and writing resources as YAML or JSON (JSON is read by the same YAML parser).
// Decoding rejects unknown fields and wrong types with the field path and, for files,
// the line; semantic checks live in validation.h.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/types.h"
#include "common/result.h"

namespace hpc::api {

// Everything one file or request declared.
struct Manifest {
  std::vector<SlurmCluster> clusters;
  std::vector<NodeSet> nodesets;
};

// Parses one or more documents ("---" separated). `source` names the input in errors.
// Manifests are refused above 1 MiB, Kubernetes' own order of limit for one object.
inline constexpr size_t kMaxManifestBytes = 1 << 20;
Result<Manifest> DecodeManifest(const std::string& text, const std::string& source);
Result<Manifest> DecodeManifestFile(const std::string& path);
// One Workspace resource (what `kubectl apply` gives the operator): the spec as the CRD schema
// has it, types checked and unknown fields refused, with the field path in the error
// ("spec.maxWorkers: must be an integer"); fields left out keep WorkspaceSpec's defaults.
Result<Workspace> DecodeWorkspace(const std::string& text, const std::string& source);

// One Environment resource (`hpcplane environments build -f`), checked as DecodeWorkspace is.
Result<Environment> DecodeEnvironment(const std::string& text, const std::string& source);

nlohmann::json ToJson(const SlurmCluster& c);
nlohmann::json ToJson(const Environment& e);
nlohmann::json ToJson(const NodeSet& n);
// A nodeset's node affinity and pod securityContext as Kubernetes writes them (`affinity`,
// `securityContext`); null when unset. What the decoder reads is what these print.
nlohmann::json AffinityJson(const PodPlacementSpec& pod);
nlohmann::json PodSecurityContextJson(const PodPlacementSpec& pod);

nlohmann::json EventsJson(const std::vector<Event>& events);

// Each status has one codec: `get -o yaml`, the state files and the CRDs' status all use it.
// Reading is lenient (a missing key keeps its default): status is recomputed every pass.
nlohmann::json StatusToJson(const SlurmClusterStatus& s);
nlohmann::json StatusToJson(const NodeSetStatus& s);
SlurmClusterStatus ClusterStatusFromJson(const nlohmann::json& j);
NodeSetStatus NodeSetStatusFromJson(const nlohmann::json& j);

// Renders JSON as block YAML, for `get -o yaml`.
std::string JsonToYaml(const nlohmann::json& j);

// "90s", "5m", "2h", "1d" or a plain number of seconds.
Result<int64_t> ParseDurationSeconds(const std::string& text);
std::string FormatDuration(int64_t seconds);

}  // namespace hpc::api
