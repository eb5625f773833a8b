// Renders slurm.conf from a SlurmCluster and its NodeSets. Pure: same input, same text, so
// the reconciler can compare and only reconfigure Slurm when something changed.
#pragma once

#include <string>
#include <vector>

#include "api/types.h"

namespace hpc::slurm {

// Paths inside pods; every pod of a cluster sees the same layout.
inline constexpr const char* kConfigDir = "/etc/slurm";
inline constexpr const char* kJwtKeyPath = "/run/secrets/jwt/jwt_hs256.key";
inline constexpr const char* kMungeSocketDir = "/run/munge";
inline constexpr const char* kStateSaveDir = "/run/slurm/state";
inline constexpr const char* kSlurmdSpoolDir = "/run/slurm/spool";
inline constexpr int kSlurmctldPort = 6817;
inline constexpr int kSlurmdPort = 6818;

// Pod (and host) name of the controller.
std::string ControllerHost(const api::SlurmCluster& c);

std::string RenderSlurmConf(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets);

// The `--conf` a worker's `slurmd -Z` registers with: its shape and the nodeset's feature.
std::string DynamicNodeConf(const api::NodeSet& ns);

}  // namespace hpc::slurm
