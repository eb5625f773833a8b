// Renders slurm.conf from a SlurmCluster and its NodeSets. Pure: same input, same text, so
// the reconciler can compare and only reconfigure Slurm when something changed.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "slurm/release.h"

namespace hpc::slurm {

// Paths inside pods; every pod of a cluster sees the same layout.
inline constexpr const char* kConfigDir = "/etc/slurm";
inline constexpr const char* kJwtKeyPath = "/run/secrets/jwt/jwt_hs256.key";
inline constexpr const char* kMungeSocketDir = "/run/munge";
// auth/slurm (Release::AuthSlurm): the cluster's key, and where sackd serves clients. Slurm's
// clients look for a socket at /run/slurm, /run/slurmctld and /run/slurmdbd, in that order: in a
// worker slurmd serves the first, in the controller (and slurmdbd) pod the daemon its own.
inline constexpr const char* kSlurmKeyDir = "/run/secrets/slurm";
inline constexpr const char* kSlurmKeyPath = "/run/secrets/slurm/slurm.key";
inline constexpr const char* kSackSocketDir = "/run/slurm";
inline constexpr const char* kSlurmdbdRunDir = "/run/slurmdbd";
inline constexpr const char* kStateSaveDir = "/run/slurm/state";
inline constexpr const char* kSlurmdSpoolDir = "/run/slurm/spool";
inline constexpr int kSlurmctldPort = 6817;
inline constexpr int kSlurmdPort = 6818;
inline constexpr int kSlurmdbdPort = 6819;
// An empty, hidden partition (resource names cannot start with '_', so it never collides).
inline constexpr const char* kPlaceholderPartition = "_hpcplane";
// Scripts slurmd runs (TaskProlog), from the slurm-scripts config map.
inline constexpr const char* kScriptsDir = "/run/slurm-scripts";
inline constexpr int kMariaDbPort = 3306;
// What pgrep -x finds Slurm's daemons by: the name they were started by, or Debian's real one
// that 23.11 on show once they re-executed themselves (reconfigure).
inline constexpr const char* kSlurmdProcessPattern = "slurmd(-wlm)?";
inline constexpr const char* kSlurmctldProcessPattern = "slurmctld(-wlm)?";
inline constexpr const char* kAccountingDatabase = "slurm_acct_db";
// slurmdbd finds slurmdbd.conf next to $SLURM_CONF; its pod points SLURM_CONF into this secret.
inline constexpr const char* kSlurmdbdConfigDir = "/run/secrets/slurmdbd";
// slurmctld's job_submit hook rewrites this file (in its state volume) on every submission and
// job update, so the operator learns of new work from a stat(2) instead of listing the queue.
inline constexpr const char* kSubmitMarkerFile = "hpcplane-submitted";

// job_submit.lua, next to slurm.conf: touches kSubmitMarkerFile, and refuses a partition the
// submitter may not use (23.11 on would queue such a job instead).
std::string JobSubmitLuaScript();

// Pod (and host) names of the controller, the accounting daemon and its database.
std::string ControllerHost(const api::SlurmCluster& c);
// The backup controller's (SlurmClusterSpec::backup_controller).
std::string BackupControllerHost(const api::SlurmCluster& c);
// Every controller in SlurmctldHost's order (the primary first): what a configless slurmd asks
// for its configuration, `host:port,host:port`.
std::string ConfServers(const api::SlurmCluster& c);
// slurm.conf's SlurmctldTimeout with a backup: how long it waits for the primary to answer (it
// asks every third of it) and for the primary's heartbeat to age (slurm/controllers.h) before it
// takes over. 6 s takes over within about 10 s of a primary's loss; without a backup, 30 s.
inline constexpr int kSlurmctldTimeoutWithBackup = 6;
// The SlurmctldTimeout the cluster runs with: the admin's (extraConfig) or hpcplane's.
int SlurmctldTimeoutSeconds(const api::SlurmCluster& c);
std::string SlurmdbdHost(const api::SlurmCluster& c);
std::string DatabaseHost(const api::SlurmCluster& c);

// How slurmd confines jobs: with the cgroup hierarchy its worker pod manages below its own (the
// pod runtime delegates it), or not at all (kNone: processes are tracked, nothing is confined).
// cgroup v2 outside a systemd unit needs Slurm 23.02's IgnoreSystemd.
enum class JobCgroups { kNone, kV1, kV2 };

// How a cluster authenticates. kSlurm (auth/slurm, cred/slurm; 23.11 on) also makes its workers
// configless (slurmd --conf-server: slurmctld serves slurm.conf and cgroup.conf and hands every
// reconfigure to them at once). kMunge: before 23.11, and a cluster that ran munge keeps it while
// its pods run (op::BuildInputs::keep_munge), so hpcplane's own upgrade cuts no running daemon off.
enum class Auth { kMunge, kSlurm };
inline Auth DefaultAuth(const Release& release) { return release.AuthSlurm() ? Auth::kSlurm : Auth::kMunge; }

// What `srun ./mpi_program` speaks to the program's MPI when the job does not say (--mpi=):
// PMIx for the Open MPI that Debian's 22.05 and 24.11 images carry (Slurm's mpi/pmix), PMI-2 from
// 25.05 on, for the MPICH that the 26.05 images make the default (Debian's 26.05 has no mpi/pmix).
inline const char* DefaultMpi(const Release& release) { return release.AtLeast(25, 5) ? "pmi2" : "pmix"; }

// `release` is the Slurm the cluster runs: options that release lacks or has retired are left
// out, settings it requires put in. `auth`: the release's default unless given. `read_by`: the
// oldest Slurm that reads the file, where older than `release` (a rolling upgrade's workers
// still on the release before): keys it does not know are left out too, since a slurmd that
// meets an unknown key refuses the whole file.
std::string RenderSlurmConf(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                            JobCgroups cgroups = JobCgroups::kNone, const Release& release = {},
                            std::optional<Auth> auth = std::nullopt, std::optional<Release> read_by = std::nullopt);

// cgroup.conf, next to slurm.conf, for confined jobs: a job gets the memory it was allocated
// and no more (and only its GPUs, where nodesets have some). Empty for kNone.
std::string RenderCgroupConf(JobCgroups cgroups, bool any_gpu, const Release& release = {});

// gres.conf, next to slurm.conf, where nodesets have GPUs: slurmd finds its worker's GPUs
// itself (AutoDetect=nvidia: the driver's /proc/driver/nvidia/gpus and /dev/nvidia<minor>, which
// show a pod its own GPUs only, locally and under the NVIDIA container toolkit), so Slurm knows
// each GPU's device file, sets CUDA_VISIBLE_DEVICES and confines jobs to theirs. Empty without
// GPUs, and before 24.11 (no gpu/nvidia plugin: GPUs are counted, not bound to devices).
std::string RenderGresConf(bool any_gpu, const Release& release = {});

// SchedulerParameters= for slurm.conf: hpcplane's defaults (quick scheduling of work on newly
// registered workers), each left out where the admin's `admin` tokens set the same key, then theirs.
std::string SchedulerParameters(const std::vector<std::string>& admin);

// A partition's options after PartitionName= and Nodes=: Default, MaxTime, State, the default
// memory per CPU, and extras. A job that asks for no memory gets its CPUs' share of the
// nodeset's memory (DefMemPerCPU = memory over CPUs), so 1-CPU jobs share a 2-CPU worker instead
// of the first taking all its memory (Slurm's default without it: DefMemPerNode=UNLIMITED).
// Left out where the admin chose: a DefMem* option of the nodeset's partition, or
// `cluster_sets_default_memory` (DefMemPerCPU or DefMemPerNode in the cluster's extraConfig,
// which a partition's own value would override).
std::vector<std::string> PartitionOptions(const api::NodeSet& ns, bool cluster_sets_default_memory);
// Whether the cluster's extraConfig sets a cluster-wide default memory for jobs.
bool ClusterSetsDefaultMemory(const api::SlurmCluster& c);
// Whether hpcplane's check program runs every spec.healthChecks.interval on every worker: checks
// on, and none of HealthCheckProgram, HealthCheckInterval, HealthCheckNodeState in extraConfig.
bool RunsPeriodicHealthChecks(const api::SlurmCluster& c);

// Whether two renderings differ in more than their NodeSet= and PartitionName= lines (those are
// applied in place; see SlurmControl::CreatePartition) and hpcplane's JobSubmitPlugins=lua (the
// change probe's hook: a cluster made before it gets it at slurmctld's next start rather than
// through a reconfigure, which Slurm 22.05 mishandles for dynamic nodes running jobs), and
// hpcplane's health check lines, for the same reason.
bool NeedsReconfigure(const std::string& old_conf, const std::string& new_conf);

// The TaskProlog every worker runs before each task.
std::string TaskPrologScript();

// slurmdbd.conf: accounting into MariaDB with the given password; `auth` (munge or auth/slurm)
// and JWT for clients.
std::string RenderSlurmdbdConf(const api::SlurmCluster& c, const std::string& db_password, Auth auth = Auth::kMunge);

// The `--conf` a worker's `slurmd -Z` registers with: its shape and the nodeset's feature.
std::string DynamicNodeConf(const api::NodeSet& ns);

}  // namespace hpc::slurm
