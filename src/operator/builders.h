// Pure builders: a SlurmCluster and its NodeSets in, runtime-neutral objects out. No I/O here;
// everything from the host (user ids, /etc/passwd) comes in through BuildInputs.
#pragma once

#include <string>
#include <vector>

#include "api/types.h"
#include "runtime/pod_runtime.h"

namespace hpc::op {

struct Account {
  int64_t uid = 0;
  int64_t gid = 0;
};

struct BuildInputs {
  Account slurm;   // SlurmUser
  Account munge;   // munged's user
  Account nobody;  // slurmrestd and idle processes
  std::string host_passwd;  // the host's /etc/passwd and /etc/group, extended with cluster users
  std::string host_group;
};

// Labels every object carries.
inline constexpr const char* kLabelCluster = "hpcplane.io/cluster";
inline constexpr const char* kLabelComponent = "hpcplane.io/component";
inline constexpr const char* kLabelNodeSet = "hpcplane.io/nodeset";

// Names of the cluster-wide objects.
inline constexpr const char* kConfigMapSlurm = "slurm-config";
inline constexpr const char* kConfigMapUsers = "slurm-users";
inline constexpr const char* kSecretMunge = "munge-key";
inline constexpr const char* kSecretJwt = "jwt-key";
inline constexpr const char* kVolumeControllerState = "controller-state";
inline constexpr const char* kVolumeMungeSocket = "munge-socket";

std::string MungePodName(const api::SlurmCluster& c);
std::string ControllerPodName(const api::SlurmCluster& c);
std::string RestApiPodName(const api::SlurmCluster& c);
std::string LoginPodName(const api::SlurmCluster& c);
std::string WorkerPodName(const api::NodeSet& ns, int ordinal);
// Ordinal of a worker pod name of this nodeset, or -1.
int WorkerOrdinal(const api::NodeSet& ns, const std::string& pod);
std::string DatasetVolumeName(const api::Dataset& d);

runtime::ConfigMap BuildSlurmConfigMap(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets);
// The slurm-users config map: users.json (the allowed Slurm users) and the passwd/group files
// every pod sees, so each user resolves to the same uid and private gid everywhere.
runtime::ConfigMap BuildUsersConfigMap(const api::SlurmCluster& c, const BuildInputs& in);

runtime::PodSpec BuildMungePod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildControllerPod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildRestApiPod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildLoginPod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildWorkerPod(const api::SlurmCluster& c, const api::NodeSet& ns, int ordinal,
                                const BuildInputs& in);

}  // namespace hpc::op
