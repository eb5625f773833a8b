// The oldest Kubernetes hpcplane's objects work on, checked against the API server's /version
// when the operator starts: below it, pods would be refused or never turn Ready, with no message
// that says why.
#pragma once

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::runtime::kubernetes {

// Native sidecars (the login pods' sackd, every Slurm pod's munged on 22.05) need 1.29; exec with stdin over WebSocket
// (every Slurm command the operator runs, a workspace's first token) 1.30.
inline constexpr int kMinimumMinor = 30;

// OK when `version` (GET /version: {"major": "1", "minor": "34", "gitVersion": "v1.34.4"}; a
// distribution's minor may read "34+") is 1.30 or later; else an error naming both versions.
Status CheckServerVersion(const nlohmann::json& version);

}  // namespace hpc::runtime::kubernetes
