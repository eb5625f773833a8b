// Resource types of the hpcplane.io/v1alpha1 API group, with Kubernetes conventions:
// apiVersion, kind, metadata, spec, status{observedGeneration, conditions}.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hpc::api {

inline constexpr const char* kApiVersion = "hpcplane.io/v1alpha1";
inline constexpr const char* kKindSlurmCluster = "SlurmCluster";
inline constexpr const char* kKindNodeSet = "NodeSet";
inline constexpr const char* kKindWorkspace = "Workspace";
inline constexpr const char* kKindEnvironment = "Environment";

struct ObjectMeta {
  std::string name;
  std::string namespace_;  // the cluster a namespaced object belongs to
  std::map<std::string, std::string> labels;
  int64_t generation = 1;
};

// One observation about a resource. status "True"/"False"/"Unknown".
struct Condition {
  std::string type;
  std::string status;
  std::string reason;
  std::string message;
  std::string last_transition_time;  // RFC 3339
};

struct Dataset {
  std::string name;
  std::string mount_path;
  std::string host_path;  // empty: a volume kept under the state dir
  // A project dataset's group (set for workspaces' datasets, never from a manifest): its volume
  // is root:<group> 2770, so only the project's members reach it. 0: a cluster-wide dataset
  // (1777, the sticky bit keeps each user's files theirs).
  int64_t group_gid = 0;
};

struct ClusterUser {
  std::string name;
  int64_t uid = 0;
  int64_t gid = 0;  // 0 means "same as uid": each user gets a private group
  bool admin = false;
  // The Slurm account of the user's jobs, which the control plane reads as their project; empty:
  // "default".
  std::string account;
};

// Job accounting: slurmdbd backed by a MariaDB pod with its data on a volume.
struct AccountingSpec {
  bool enabled = true;
  std::string enforce;  // AccountingStorageEnforce, e.g. "associations,limits"; empty: none
};

// Worker health checks: a program slurmd runs every `interval` (HealthCheckProgram) and after
// every job (Epilog) reports each worker's health into its Slurm node record; the operator
// drains failing workers with "hpcplane:health:<check>: <detail>", resumes only the drains it
// set once the check passes again, and replaces a worker drained longer than `replaceAfter`
// once it runs nothing.
struct HealthChecksSpec {
  bool enabled = true;
  int64_t interval_seconds = 30;
  int64_t timeout_seconds = 10;         // per check; a check that runs longer is killed and fails
  int min_free_percent = 10;            // of /tmp and of slurmd's spool directory
  int64_t max_clock_skew_seconds = 30;  // against slurmctld's clock
  // Most workers of a nodeset drained by health checks at once: a count ("2") or a share of the
  // nodeset's workers ("20%", rounded up, at least 1). Beyond it the check itself is suspect.
  std::string max_unhealthy = "20%";
  int64_t replace_after_seconds = 600;
  int max_replacements_per_hour = 10;

  // The cap for a nodeset of `workers` workers.
  int MaxUnhealthy(int workers) const;
};

// A rolling Slurm upgrade (the environment changed to a newer release): slurmdbd, then the
// controllers, then every worker on the old release is drained and replaced once its jobs end,
// while new workers on the new release take the queue. Old workers still running jobs
// `drainDeadline` after their drain are left alone (Wait), or their jobs are requeued (Requeue)
// or cancelled (Cancel).
inline constexpr const char* kAfterDeadlineWait = "Wait";
inline constexpr const char* kAfterDeadlineRequeue = "Requeue";
inline constexpr const char* kAfterDeadlineCancel = "Cancel";
struct UpgradeSpec {
  int64_t drain_deadline_seconds = 24 * 3600;
  std::string after_deadline = kAfterDeadlineWait;
};

struct SlurmClusterSpec {
  std::string subnet;  // CIDR /24 for the local runtime; empty: derived from the name
  // The cluster compute environment (an Environment's name, api/environments.h) every Slurm pod
  // runs from; empty: the newest built-in. It decides the Slurm release.
  std::string environment;
  // One root file system, made from the environment's image, for every worker and login pod
  // (Soperator's "jail"): software the admin installs in the login pod is on every worker at
  // once. Local runtime only.
  bool shared_root = false;
  int rest_port = 6820;
  // slurmrestd is restarted above this much memory (0: never). Slurm 22.05's slurmrestd keeps
  // the memory of every job listing it serves: listing 5,000 jobs once a second grew it to
  // 3.7 GiB in three minutes (see bench/README.md).
  int64_t rest_memory_limit_mib = 2048;
  bool login_enabled = true;
  // A second slurmctld in a pod of its own (SlurmctldHost twice), on the first one's state
  // volume: it takes over once the first has not answered for SlurmctldTimeout, and gives control
  // back when the first returns. Kubernetes: that volume's claim is ReadWriteMany.
  bool backup_controller = false;
  int min_replica_count = 0;  // default minReplicas for nodesets
  int max_node_count = 64;    // Slurm's MaxNodeCount: bound on dynamic nodes
  std::vector<std::string> scheduler_parameters;
  std::string priority_type;              // e.g. priority/multifactor; empty: Slurm's default
  std::vector<std::string> extra_config;  // verbatim slurm.conf lines
  std::vector<Dataset> datasets;
  std::vector<ClusterUser> users;
  AccountingSpec accounting;
  HealthChecksSpec health_checks;
  UpgradeSpec upgrade;
  // Kubernetes: the cluster's claims (slurmctld's state, the accounting database, datasets) stay
  // when the SlurmCluster is deleted, and a SlurmCluster of the same name in the same namespace
  // takes them up again. False: they go with it, as its other objects do. (Local runtime:
  // volumes stay until `down --purge`, whatever this says.)
  bool retain_volumes_on_delete = false;
};

struct SlurmClusterStatus {
  int64_t observed_generation = 0;
  std::vector<Condition> conditions;
  std::map<std::string, std::string> endpoints;           // component -> address
  std::map<std::string, std::string> component_versions;  // e.g. slurm/slurmctld -> 22.05.8
  std::map<std::string, std::string> components;          // component -> "Ready" or why not
  // The controller pod whose slurmctld serves now: the primary's, or the backup's while it has
  // taken over (Slurm's heartbeat says which: slurm/controllers.h); empty while none serves.
  std::string leading_controller;
};

struct SlurmCluster {
  ObjectMeta metadata;
  SlurmClusterSpec spec;
  SlurmClusterStatus status;
};

struct WorkerResources {
  int cpus = 1;
  int64_t memory_mib = 1024;
  int gpus = 0;
  int64_t tmp_mib = 1024;  // size of the worker's private /tmp (and /dev/shm)
};

// A Kubernetes toleration of a node taint, for a nodeset's workers (e.g. GPU nodes' taints).
struct Toleration {
  std::string key;
  std::string op;  // "Exists" or "Equal" (empty: Equal)
  std::string value;
  std::string effect;          // empty (every effect), NoSchedule, PreferNoSchedule or NoExecute
  std::optional<int> seconds;  // how long a NoExecute taint is tolerated; unset: forever
  bool operator==(const Toleration&) const = default;
};

// A requirement on a node's label, as in Kubernetes' node affinity.
struct NodeSelectorRequirement {
  std::string key;
  std::string op;  // In, NotIn, Exists, DoesNotExist, Gt, Lt
  std::vector<std::string> values;
  bool operator==(const NodeSelectorRequirement&) const = default;
};
struct NodeSelectorTerm {
  std::vector<NodeSelectorRequirement> match_expressions;  // all must hold
  bool operator==(const NodeSelectorTerm&) const = default;
};
struct PreferredNodeTerm {
  int weight = 0;  // 1-100
  NodeSelectorTerm preference;
  bool operator==(const PreferredNodeTerm&) const = default;
};

// Where a nodeset's workers may run on Kubernetes, and the pod-level security settings the
// platform requires of them: a Pod's nodeSelector, tolerations, node affinity (required: one of
// the terms must hold; preferred: weighted), priorityClassName, imagePullSecrets and
// securityContext.seccompProfile. One machine (the local runtime) ignores it.
struct PodPlacementSpec {
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  std::vector<NodeSelectorTerm> required_node_terms;
  std::vector<PreferredNodeTerm> preferred_node_terms;
  std::string priority_class_name;
  std::vector<std::string> image_pull_secrets;
  std::string seccomp_type;               // RuntimeDefault, Localhost or Unconfined; empty: unset
  std::string seccomp_localhost_profile;  // with Localhost
  bool empty() const {
    return node_selector.empty() && tolerations.empty() && required_node_terms.empty() &&
           preferred_node_terms.empty() && priority_class_name.empty() && image_pull_secrets.empty() &&
           seccomp_type.empty();
  }
};

struct PartitionSpec {
  std::string name;  // empty: the nodeset's name
  bool is_default = false;
  std::string max_time = "INFINITE";
  std::map<std::string, std::string> options;  // extra PartitionName options, e.g. AllowGroups
  std::string state = "UP";                    // UP | DRAIN (no new jobs; queued ones still run) | DOWN | INACTIVE
};

struct NodeSetSpec {
  std::string cluster;
  // The environment this nodeset's workers run from; empty: the cluster's. It must carry the
  // cluster's Slurm release.
  std::string environment;
  std::optional<int> replicas;      // workers pinned by hand; unset: autoscaled from demand
  std::optional<int> min_replicas;  // empty: the cluster's minReplicaCount
  int max_replicas = 4;
  int64_t idle_timeout_seconds = 300;
  // Rate limits: most workers added / drained in one minute; 0 means no limit.
  int scale_up_per_minute = 0;
  int scale_down_per_minute = 0;
  WorkerResources resources;
  PartitionSpec partition;
  std::vector<std::string> features;
  // Volumes mounted on this nodeset's workers besides the cluster's datasets (name -> volume
  // "dataset-<name>", created on first use).
  std::vector<Dataset> datasets;
  // The admin's own health checks for this nodeset's workers (name -> script starting with
  // "#!"), run with the built-in ones; a non-zero exit fails the check.
  std::map<std::string, std::string> health_check_scripts;
  PodPlacementSpec pod;
};

// A scaling decision or problem worth showing in `describe` (Kubernetes events, kept short).
struct Event {
  std::string time;  // RFC 3339
  std::string type;  // Normal | Warning
  std::string reason;
  std::string message;
};

struct NodeSetStatus {
  int64_t observed_generation = 0;
  int desired = 0;
  int replicas = 0;  // worker pods that exist
  int ready = 0;     // registered in Slurm and usable
  int busy = 0;
  int idle = 0;
  int draining = 0;
  int unhealthy = 0;  // drained by a failing health check
  // Workers on an image the nodeset no longer runs (a rolling upgrade): drained, each replaced
  // once its jobs end. Counted among `draining` as well.
  int outdated = 0;
  // Over the nodeset's life: workers drained by health checks, and workers replaced.
  int64_t health_drains = 0;
  int64_t replacements = 0;
  std::string last_decision;
  std::vector<Condition> conditions;
  std::vector<Event> events;  // newest last, at most kMaxEvents
};
inline constexpr size_t kMaxEvents = 20;

struct NodeSet {
  ObjectMeta metadata;
  NodeSetSpec spec;
  NodeSetStatus status;

  std::string PartitionName() const { return spec.partition.name.empty() ? metadata.name : spec.partition.name; }
  int MinReplicas(int cluster_default) const { return spec.min_replicas.value_or(cluster_default); }
};

// The TCP ports a workspace's tools (JupyterLab...) listen on in its login pod. Only the data
// plane's agent reaches them (it proxies them, owner only): no pod of the cluster does
// (operator/network_flows.h), which leaves every other port of a login pod to the user's own
// servers (a Dask scheduler its jobs call back).
inline constexpr int kToolPortFirst = 18880;
inline constexpr int kToolPortLast = 18899;

// A practitioner's workspace: a login pod as the user, an autoscaled nodeset and partition only
// the user (and admins) may use, a Slurm token, and the project's datasets. What the launch
// resolved from the platform catalogs (the user's ids and role, the tier's shape) is copied into
// the spec, so the operator needs nothing but the workspace itself.
struct WorkspaceSpec {
  std::string cluster;
  ClusterUser user;  // admin: the platform user has the SysAdmin role
  std::string project;
  std::string tier;
  WorkerResources resources;  // the tier's shape
  int max_workers = 2;
  int64_t idle_timeout_seconds = 300;
  int64_t token_lifetime_seconds = 8 * 3600;
  std::vector<std::string> datasets;            // project datasets, mounted at /datasets/<name>
  std::map<std::string, int64_t> dataset_gids;  // each dataset's group (platform catalog)
  // The workspace compute environment its login pod runs from (the project's); empty: the
  // cluster's own environment. Its Slurm must be the cluster's series.
  std::string environment;
  // Set by `workspace stop`: drain the partition, wait for (or cancel) its jobs, then remove all.
  bool stopping = false;
  bool cancel_jobs = false;
};

struct WorkspaceStatus {
  std::string phase = "Pending";  // Pending | Ready | Stopping
  std::string message;
  int64_t token_expires = 0;  // unix seconds
  int active_jobs = 0;
  // Stopping, its workers gone: its partition leaves Slurm, and the record goes once Slurm no
  // longer lists the partition.
  bool released = false;
  std::vector<Condition> conditions;
};

struct Workspace {
  ObjectMeta metadata;  // name: the workspace id; namespace_: the cluster
  WorkspaceSpec spec;
  WorkspaceStatus status;
};

// A compute environment: a root file system built from a Debian suite and packages
// (mmdebstrap), that a cluster's pods (purpose "cluster": Slurm's daemons, MPI) or a workspace's
// login pod (purpose "workspace": the Slurm CLI and the user's tools) run from.
struct EnvironmentFile {
  std::string path;  // absolute, inside the image
  std::string content;
  int mode = 0644;
  bool operator==(const EnvironmentFile&) const = default;
};

struct EnvironmentSpec {
  std::string suite;    // Debian suite: bookworm, trixie, sid, ...
  std::string purpose;  // cluster | workspace
  std::vector<std::string> packages;
  std::vector<EnvironmentFile> files;
  std::string post_install;  // a shell script run in the image as root once packages are in
  bool operator==(const EnvironmentSpec&) const = default;
};

struct Environment {
  ObjectMeta metadata;
  EnvironmentSpec spec;
};

}  // namespace hpc::api
