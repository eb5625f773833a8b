// Pure builders: a SlurmCluster and its NodeSets in, runtime-neutral objects out. No I/O here;
// everything from the host (user ids, /etc/passwd) comes in through BuildInputs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/types.h"
#include "runtime/pod_runtime.h"
#include "slurm/config.h"
#include "slurm/release.h"

namespace hpc::op {

struct Account {
  int64_t uid = 0;
  int64_t gid = 0;
};

struct BuildInputs {
  Account slurm;            // SlurmUser
  Account munge;            // munged's user
  Account nobody;           // slurmrestd and idle processes
  Account mysql;            // MariaDB's user; uid -1 when MariaDB is not installed
  std::string host_passwd;  // the host's /etc/passwd and /etc/group, extended with cluster users
  std::string host_group;
  // Each Slurm pod that needs one runs its own authentication daemon as a sidecar (munged; with
  // auth/slurm, sackd in the pods of clients) because pods on different machines cannot share a
  // Unix socket (Kubernetes), instead of every pod using one munge or sackd pod's (local).
  bool auth_sidecars = false;
  // /etc/passwd and /etc/group reach pods as the slurm-users config map mounted whole at
  // kUsersDir, which the image links them into (Kubernetes: a config map mounted by file, with
  // subPath, is never updated in a running pod, so users added later would be unknown to it),
  // instead of as the two files mounted by name (local: updated in place).
  bool users_from_directory = false;
  // Whether pods may make namespaces of their own (local pods may; a Kubernetes pod without
  // CAP_SYS_ADMIN may not): slurmrestd unshares its SysV IPC and file descriptors unless told not to.
  bool pods_may_unshare = true;
  // Commands run in a pod start as its container's user with the pod's own groups (Kubernetes'
  // pods/exec), not as any user with her groups from /etc/group (local exec). So a workspace's
  // login pod lists its datasets' groups, and the cluster's login pod, which people enter as
  // themselves and the admin as root (to install into a shared root), runs as root.
  bool exec_as_container_user = false;
  // slurmctld reads its configuration from a directory of its pod that the operator writes
  // (ExecOptions with stdin) as soon as it changes, instead of from the mounted config map, which
  // a kubelet refreshes up to a minute later (Kubernetes). Its start copies the config map there
  // unless the operator wrote it already. Configless workers then get each change from slurmctld
  // at once. Only where workers are configless (PushesControllerConfig).
  bool controller_config_pushed = false;
  // How slurmd confines jobs (slurm/config.h); anything but kNone delegates the worker pods'
  // cgroups to them.
  slurm::JobCgroups job_cgroups = slurm::JobCgroups::kNone;
  // The Slurm release the cluster's images carry (slurmrestd's plugins, slurm.conf's options).
  slurm::Release release;
  // The oldest Slurm among the cluster's running pods, where older than `release`: a rolling
  // upgrade's pods still on the release before. Slurm's files are written for it (slurm.conf
  // holds no key it does not know). Set by each pass (ClusterReconciler), not at construction.
  std::optional<slurm::Release> config_release;
  // Environment name or image reference -> the Slurm release it carries, for every one known
  // here: how a running pod's release is told from its image (ReleaseOfImage).
  std::map<std::string, slurm::Release> environment_releases;
  // Environment name -> the image pods of that environment run (PodSpec::image): local, an image
  // of the store; Kubernetes, an image reference. Empty: pods run the host's system.
  std::map<std::string, std::string> images;
  // The munge the pods run (the cluster image's, else the host's), for status.
  std::string munge_version;
  // A cluster whose pods run munge keeps it (and its workers their slurm.conf) after hpcplane
  // itself is upgraded, even on a release with auth/slurm: switching would cut the running daemons
  // and their jobs off. It switches when it next starts with no pod (down and up, `upgrade`).
  // Decided once per controller set (NewClusterControllers).
  bool keep_munge = false;
};

// Where pods find slurm-users when it is mounted whole (BuildInputs::users_from_directory); the
// Slurm image's /etc/passwd and /etc/group are links into it (app/environments.cc's Kubernetes
// layer of an exported environment).
inline constexpr const char* kUsersDir = "/etc/hpcplane/users";

// Labels every object carries.
inline constexpr const char* kLabelCluster = "hpcplane.io/cluster";
inline constexpr const char* kLabelComponent = "hpcplane.io/component";
inline constexpr const char* kLabelNodeSet = "hpcplane.io/nodeset";
inline constexpr const char* kLabelWorkspace = "hpcplane.io/workspace";
// "backup" on the backup controller's pod, which is a "controller" too.
inline constexpr const char* kLabelControllerRole = "hpcplane.io/controller-role";

// Names of the cluster-wide objects.
inline constexpr const char* kConfigMapSlurm = "slurm-config";
inline constexpr const char* kConfigMapUsers = "slurm-users";
inline constexpr const char* kConfigMapScripts = "slurm-scripts";
inline constexpr const char* kConfigMapHealth = "slurm-health";  // health check settings per nodeset
inline constexpr const char* kSecretMunge = "munge-key";
inline constexpr const char* kSecretSlurmKey = "slurm-key";  // auth/slurm's slurm.key (owner slurm)
inline constexpr const char* kSecretJwt = "jwt-key";
inline constexpr const char* kVolumeControllerState = "controller-state";
inline constexpr const char* kVolumeMungeSocket = "munge-socket";
inline constexpr const char* kVolumeSackSocket = "sack-socket";    // sackd's socket and its clients
inline constexpr const char* kSecretDatabase = "accounting-db";    // MariaDB's init.sql (owner mysql)
inline constexpr const char* kSecretSlurmdbd = "slurmdbd-config";  // slurmdbd.conf (owner slurm)
inline constexpr const char* kVolumeDatabase = "accounting-db";    // MariaDB's data directory
inline constexpr const char* kVolumeSharedRoot = "shared-root";    // SlurmClusterSpec::shared_root
inline constexpr const char* kConfigMapWorkspaceTools = "workspace-tools";
// Members may use every workspace's partition and hold Slurm's administrator level.
inline constexpr const char* kAdminGroup = "hpcadmins";
inline constexpr int64_t kAdminGroupGid = 59999;
// slurmctld's own copy of slurm-config (BuildInputs::controller_config_pushed).
inline constexpr const char* kControllerConfigDir = "/run/slurm-config";
// Where a workspace login pod finds its token and the Slurm commands that use it.
inline constexpr const char* kTokenDir = "/run/secrets/slurm-token";
inline constexpr const char* kWorkspaceToolsDir = "/run/hpcplane/bin";

std::string MungePodName(const api::SlurmCluster& c);
std::string SackdPodName(const api::SlurmCluster& c);
// How the cluster's pods authenticate (slurm/config.h): munge before 23.11 or where kept, else
// auth/slurm with configless workers.
slurm::Auth AuthOf(const BuildInputs& in);
bool UsesMunge(const BuildInputs& in);
std::string ControllerPodName(const api::SlurmCluster& c);
std::string BackupControllerPodName(const api::SlurmCluster& c);
std::string RestApiPodName(const api::SlurmCluster& c);
std::string LoginPodName(const api::SlurmCluster& c);
std::string WorkerPodName(const api::NodeSet& ns, int ordinal);
// Ordinal of a worker pod name of this nodeset, or -1.
int WorkerOrdinal(const api::NodeSet& ns, const std::string& pod);
std::string DatasetVolumeName(const api::Dataset& d);
std::string MariaDbPodName(const api::SlurmCluster& c);
std::string SlurmdbdPodName(const api::SlurmCluster& c);
std::string WorkspaceLoginPodName(const api::Workspace& w);
std::string WorkspaceTokenSecretName(const api::Workspace& w);

// Executable scripts slurmd runs (TaskProlog).
runtime::ConfigMap BuildScriptsConfigMap();
// Each nodeset's health check settings and its admin's check scripts (slurm/health_check.h).
runtime::ConfigMap BuildHealthConfigMap(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                                        const BuildInputs& in = {});
// slurm.conf (and cgroup.conf when jobs are confined) for the release and cgroups of `in`.
runtime::ConfigMap BuildSlurmConfigMap(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                                       const BuildInputs& in = {});
// A project dataset's group: its volume is root:<group> 2770; members reach it, nobody else.
struct DatasetGroup {
  std::string name;  // DatasetGroupName(dataset)
  int64_t gid = 0;
  std::vector<std::string> members;
  bool operator==(const DatasetGroup&) const = default;
};
std::string DatasetGroupName(const std::string& dataset);
// The slurm-users config map: users.json (the allowed Slurm users) and the passwd/group files
// every pod sees, so each user resolves to the same uid and private gid everywhere.
// Workspace users join the cluster's own; admins are also members of kAdminGroup and of every
// dataset group.
runtime::ConfigMap BuildUsersConfigMap(const api::SlurmCluster& c, const std::vector<api::ClusterUser>& extra_users,
                                       const BuildInputs& in, const std::vector<DatasetGroup>& dataset_groups = {});
// Wrappers for the Slurm commands in a workspace: each reads the token afresh, so a refreshed
// token is used at once; srun and salloc use munge or auth/slurm (slurmd accepts no JWT).
runtime::ConfigMap BuildWorkspaceToolsConfigMap();
// The environment of a workspace shell or exec.
std::map<std::string, std::string> WorkspaceShellEnv(const api::Workspace& w);

runtime::PodSpec BuildMungePod(const api::SlurmCluster& c, const BuildInputs& in);
// With auth/slurm on a runtime without sidecars: one sackd whose socket the pods of clients
// (login, workspaces, slurmrestd) share, as they share the munge pod's before 23.11.
runtime::PodSpec BuildSackdPod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildControllerPod(const api::SlurmCluster& c, const BuildInputs& in);
// The backup slurmctld (SlurmClusterSpec::backup_controller): the primary's pod under the name
// SlurmctldHost gives second, on the same state volume.
runtime::PodSpec BuildBackupControllerPod(const api::SlurmCluster& c, const BuildInputs& in);
// Whether the operator writes slurmctld's configuration into its pod: where asked
// (BuildInputs::controller_config_pushed) for configless clusters, whose workers take a change
// from slurmctld (a worker that reads its own mounted file would lag behind it).
bool PushesControllerConfig(const BuildInputs& in);
// The slurm.conf slurmctld reads: in kControllerConfigDir when the operator pushes it, else the
// mounted config map's.
std::string ControllerSlurmConf(const BuildInputs& in);
runtime::PodSpec BuildRestApiPod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildLoginPod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildMariaDbPod(const api::SlurmCluster& c, const BuildInputs& in);
runtime::PodSpec BuildSlurmdbdPod(const api::SlurmCluster& c, const BuildInputs& in);
// SQL run by MariaDB at every start: the slurm account with the current password, and its grant.
std::string DatabaseInitSql(const std::string& password);
runtime::PodSpec BuildWorkspaceLoginPod(const api::SlurmCluster& c, const api::Workspace& w, const BuildInputs& in);
runtime::PodSpec BuildWorkerPod(const api::SlurmCluster& c, const api::NodeSet& ns, int ordinal, const BuildInputs& in);
// The image a nodeset's new workers run (BuildWorkerPod's); empty where pods run the host's system.
std::string WorkerImage(const api::SlurmCluster& c, const api::NodeSet& ns, const BuildInputs& in);
// The Slurm release a pod's image carries, where its environment is known
// (BuildInputs::environment_releases): an image the inputs pin, or a local image reference
// "ENVIRONMENT@sha256:..." of another build.
std::optional<slurm::Release> ReleaseOfImage(const BuildInputs& in, const std::string& image);

}  // namespace hpc::op
