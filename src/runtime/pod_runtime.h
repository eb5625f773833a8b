// PodRuntime: the one seam between reconcilers and the world. Reconcilers describe pods,
// config maps, secrets and volumes in runtime-neutral terms; a runtime realises them
// (namespaced processes in runtime/local, Kubernetes objects in runtime/kubernetes). Nothing
// above this interface may depend on PIDs, host paths or namespaces.
//
// The pod's file-system contract, which every runtime keeps (the local runtime with its own
// root per pod, see local/pod_init.h; Kubernetes with container images):
//  - the operating system's programs and libraries (Slurm, munge, MariaDB, a shell, coreutils)
//    read-only, with the configuration they need to run;
//  - exactly the pod's `mounts`, at their mount paths: nothing else of the machine, no other
//    pod's files, no other cluster's, no state of hpcplane's;
//  - a private writable /tmp of bounded size, /run, /dev with the usual devices, /proc of the
//    pod's own processes;
//  - /etc/hosts resolving every pod of the cluster by name.
// A daemon that needs more gets it through an explicit mount.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "common/subprocess.h"

namespace hpc::runtime {

enum class MountSource { kConfigMap, kSecret, kVolume, kEmptyDir, kHostPath };

struct Mount {
  MountSource source = MountSource::kVolume;
  std::string name;        // config map / secret / volume / emptyDir name, or the host path
  std::string mount_path;  // absolute path inside the pod
  std::string sub_path;    // one key / file of the source instead of all of it
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};

// How the runtime decides a running pod is ready.
struct Probe {
  int tcp_port = 0;                  // ready once the port accepts connections (with http_path:
  std::string http_path;             // once an HTTP GET of this path on it answers 2xx), or
  std::vector<std::string> command;  // ready once this command exits 0 inside the pod
  bool operator==(const Probe&) const = default;
};

// How the runtime tells that a ready pod still works (a hung daemon, not only a dead one): every
// period the probe runs; after `failure_threshold` failures in a row the pod is killed and
// restarted by its policy. Unset (no port, no command): only the pod's death is noticed.
struct LivenessProbe {
  int http_port = 0;                 // alive while an HTTP request to this port is answered
  std::string http_path;             // (any status to "/"; 2xx to this path when set), or
  std::vector<std::string> command;  // while this command exits 0 inside the pod
  int period_seconds = 10;
  int timeout_seconds = 5;
  int failure_threshold = 3;
  bool Set() const { return http_port > 0 || !command.empty(); }
  bool operator==(const LivenessProbe&) const = default;
};

enum class RestartPolicy { kAlways, kOnFailure, kNever };

// Compute resources, as in Kubernetes. 0: none.
struct ResourceList {
  int cpus = 0;
  int64_t memory_mib = 0;
  int gpus = 0;
  bool empty() const { return cpus == 0 && memory_mib == 0 && gpus == 0; }
  bool operator==(const ResourceList&) const = default;
};

// Requests are what a pod needs to be placed (on Kubernetes, the node it lands on has them
// free); limits are what it may use. A runtime enforces limits where its host allows and says
// which it does not (PodStatus::not_enforced): a memory limit kills and restarts the pod by its
// policy, as an OOM kill of its container would.
struct Resources {
  ResourceList requests;
  ResourceList limits;
  bool operator==(const Resources&) const = default;
};

// A helper process that runs beside the pod's main process for the pod's whole life (a
// Kubernetes native sidecar): started before it, ready before it starts, restarted when it
// dies. On Kubernetes a pod gets its own sackd (or munged) this way (a Unix socket cannot cross
// machines); the local runtime shares one sackd or munge pod instead and refuses sidecars.
struct Sidecar {
  std::string name;
  std::vector<std::string> command;
  int64_t uid = 0;
  int64_t gid = 0;
  std::vector<Mount> mounts;
  Probe readiness;
  bool operator==(const Sidecar&) const = default;
};

// Where a pod may be placed, for runtimes that place pods on machines (Kubernetes: nodeSelector,
// tolerations, priorityClassName, imagePullSecrets). The local runtime has one machine and
// ignores it.
struct Toleration {
  std::string key;
  std::string op;
  std::string value;
  std::string effect;
  int64_t seconds = -1;  // tolerationSeconds; -1: unset
  bool operator==(const Toleration&) const = default;
};
struct Placement {
  std::map<std::string, std::string> node_selector;
  std::vector<Toleration> tolerations;
  std::string priority_class;
  std::vector<std::string> image_pull_secrets;
  // Already in Kubernetes' form (a Pod's `affinity` and pod-level `securityContext`), validated
  // by the layer that built them; null when unset.
  nlohmann::json affinity;
  nlohmann::json security_context;
  bool empty() const {
    return node_selector.empty() && tolerations.empty() && priority_class.empty() && image_pull_secrets.empty() &&
           affinity.is_null() && security_context.is_null();
  }
  bool operator==(const Placement&) const = default;
};

// A pod's /tmp (and /dev/shm) when its spec gives no size: a job's scratch cannot fill the disk.
inline constexpr int64_t kDefaultPodTmpMiB = 1024;

struct PodSpec {
  std::string name;  // also the pod's host name
  std::map<std::string, std::string> labels;
  // The image the pod's system directories come from: local runtime, an image of its store
  // ("name@sha256:<digest>", local/image_store.h), empty: the host's; Kubernetes, the image
  // reference of its main container, empty: the cluster's (ObjectContext::image).
  std::string image;
  // The pod's system directories come from this volume instead, made once from the image and
  // shared by every pod that names it; writable in pods that may install software there (as
  // root), read-only elsewhere. Empty: the image itself, read-only.
  std::string shared_root;
  bool shared_root_writable = false;
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  int64_t uid = 0;  // the main process's user; 0 only for daemons that drop privileges themselves
  int64_t gid = 0;
  // Its other groups (a workspace user's dataset groups). Kubernetes: the pod's
  // supplementalGroups, which `pods/exec` processes have too; local pods: commands enter a
  // user's groups from the pod's /etc/group (setpriv --init-groups) instead.
  std::vector<int64_t> supplemental_groups;
  std::string working_dir = "/";
  std::vector<Mount> mounts;
  Probe readiness;
  LivenessProbe liveness;
  RestartPolicy restart_policy = RestartPolicy::kAlways;
  Resources resources;
  // Size of the pod's private /tmp (and /dev/shm), like an emptyDir's sizeLimit. 0:
  // kDefaultPodTmpMiB.
  int64_t tmp_mib = 0;
  std::vector<Sidecar> sidecars;
  Placement placement;
  // The pod manages cgroups below its own (slurmd confines each job in one). Local runtime: the
  // pod's cgroup directories are writable inside it; elsewhere they are read-only.
  bool delegate_cgroups = false;
  bool operator==(const PodSpec&) const = default;
};

enum class PodPhase { kPending, kRunning, kSucceeded, kFailed };
const char* PodPhaseName(PodPhase p);

struct PodStatus {
  std::string name;
  std::map<std::string, std::string> labels;
  PodPhase phase = PodPhase::kPending;
  bool ready = false;
  std::string ip;
  int restarts = 0;
  int64_t started_at = 0;  // unix seconds of the current run
  // Being deleted: unix seconds by which its processes should have ended (Kubernetes: the
  // deletionTimestamp, the request's time plus the grace period). 0: not being deleted.
  int64_t delete_by = 0;
  std::string message;  // why it is not running, when it is not
  Resources resources;
  // The image it runs (PodSpec::image): an upgrade tells old workers from new ones by it.
  std::string image;
  // The pod's resources this runtime does not enforce on this host, each with why, e.g.
  // "limits.cpus: not enforced: ...". Empty when everything asked for is enforced.
  std::vector<std::string> not_enforced;
};

struct ConfigMap {
  std::string name;
  std::map<std::string, std::string> data;  // file name -> content
  int default_mode = 0644;                  // mode of every file, e.g. 0755 for scripts
};

// Secret material. Files are mode 0600 (0400 with read_only_owner), owned by owner_uid.
struct Secret {
  std::string name;
  std::map<std::string, std::string> data;
  int64_t owner_uid = 0;
  int64_t owner_gid = 0;
};

// A persistent volume: its root directory's owner and mode are the caller's every time it is
// ensured; the data inside is never touched.
struct Volume {
  std::string name;
  int64_t owner_uid = 0;
  int64_t owner_gid = 0;
  uint32_t mode = 0700;
  // Mounted by many pods at once (a dataset), not by one pod (a daemon's state). On Kubernetes
  // the claim is ReadWriteMany instead of ReadWriteOnce.
  bool shared = false;
  // Kept when its cluster is deleted (Kubernetes: the claim has no owner reference to the
  // SlurmCluster, so the garbage collector leaves it). A runtime that deletes volumes only when
  // told to (local: `down --purge`) ignores it.
  bool retain = false;
};

// Which pods may open connections to which: the ingress half of a Kubernetes NetworkPolicy, as
// much of it as hpcplane uses. A pod that no policy selects accepts connections from anyone; a
// pod that some policy selects accepts only what one of the selecting policies' rules allows.
// Replies to a pod's own connections always pass, and so does what the runtime's own host opens
// (probes, the operator). Selectors match pod labels (every pair must match).
using LabelSelector = std::map<std::string, std::string>;
// One TCP port, or the ports first..last.
struct PortRange {
  int first = 0, last = 0;
  PortRange(int port) : first(port), last(port) {}  // NOLINT(google-explicit-constructor): {6817} reads as a port
  PortRange(int first_port, int last_port) : first(first_port), last(last_port) {}
  bool Contains(int port) const { return port >= first && port <= last; }
  bool operator==(const PortRange&) const = default;
};
struct IngressRule {
  std::vector<LabelSelector> from;   // pods any of these select
  std::vector<PortRange> tcp_ports;  // to these TCP ports; empty: to every port and protocol
  bool operator==(const IngressRule&) const = default;
};
struct NetworkPolicy {
  std::string name;
  LabelSelector pod_selector;
  std::vector<IngressRule> ingress;  // empty: the selected pods accept no connection from pods
  bool operator==(const NetworkPolicy&) const = default;
};

struct ExecOptions {
  std::string user = "root";  // a user known inside the pod
  // That user's uid, when the caller knows it: a container that already runs as it (a
  // workspace's login pod on Kubernetes) needs no change of user, which it could not make.
  std::optional<int64_t> uid;
  std::map<std::string, std::string> env;
  std::vector<std::string> argv;
  std::string working_dir;
  std::chrono::milliseconds timeout{60000};
  std::string stdin_data;
};

class PodRuntime {
 public:
  virtual ~PodRuntime() = default;

  /** Creates or replaces a config map; pods that mount it see the new content. */
  virtual Status ApplyConfigMap(const ConfigMap& cm) = 0;
  /** Returns the config map, or nullopt when it does not exist. */
  virtual Result<std::optional<ConfigMap>> GetConfigMap(const std::string& name) = 0;
  virtual Status DeleteConfigMap(const std::string& name) = 0;

  /** Creates or replaces a secret. */
  virtual Status ApplySecret(const Secret& secret) = 0;
  virtual Result<std::optional<Secret>> GetSecret(const std::string& name) = 0;
  virtual Status DeleteSecret(const std::string& name) = 0;

  /** Creates or replaces a network policy; it holds for pods created later too. */
  virtual Status ApplyNetworkPolicy(const NetworkPolicy& policy) = 0;
  virtual Result<std::optional<NetworkPolicy>> GetNetworkPolicy(const std::string& name) = 0;
  virtual Status DeleteNetworkPolicy(const std::string& name) = 0;

  /** Ensures a persistent volume exists; its data survives pod restarts and `down`. */
  virtual Status EnsureVolume(const Volume& volume) = 0;

  /**
   * Creates and starts a pod. Idempotent: an existing pod with the same spec is left alone;
   * one with a different spec is an error (delete it first).
   */
  virtual Status CreatePod(const PodSpec& spec) = 0;
  /** Stops the pod (TERM, then KILL after the grace period) and releases what it held. */
  virtual Status DeletePod(const std::string& name) = 0;
  /**
   * Removes a pod whose machine is gone without waiting for that machine to say its processes
   * ended (Kubernetes: a deletion with grace period 0), so its name is free again. Only for a
   * pod neither Slurm nor the runtime can reach: were its machine only cut off, its processes
   * would run on there. A runtime that runs its pods itself stops them as DeletePod does.
   */
  virtual Status ForgetPod(const std::string& name) = 0;
  /** Pods whose labels include every pair of `selector`. */
  virtual Result<std::vector<PodStatus>> ListPods(const std::map<std::string, std::string>& selector = {}) = 0;
  virtual Result<std::optional<PodSpec>> GetPodSpec(const std::string& name) = 0;

  /** Runs a command inside a running pod as the given user and captures its output. */
  virtual Result<ProcessResult> Exec(const std::string& pod, const ExecOptions& opts) = 0;
  /** Runs a command inside a pod attached to this process's terminal; returns its exit code. */
  virtual Result<int> ExecInteractive(const std::string& pod, const ExecOptions& opts) = 0;
  /** The last `tail_lines` lines of the pod's output (all when 0). */
  virtual Result<std::string> Logs(const std::string& pod, size_t tail_lines) = 0;
};

// What one supervision pass saw: whether a pod started, stopped or changed readiness, and
// whether every pod is settled (running and ready, or finished for good).
struct SupervisionResult {
  bool changed = false;
  bool settled = true;
};

// The part of a runtime's life its reconcilers do not drive, used by the process that owns the
// runtime (the daemon) and by `down`. A runtime that hosts pods itself (local) starts, restarts
// and probes them in Supervise; one whose pods another system runs (Kubernetes: the kubelet)
// only reports. Adoption after a crash is part of opening a runtime: an opened runtime knows
// the pods an earlier process of the same cluster left running and supervises them as its own.
class RuntimeLifecycle {
 public:
  virtual ~RuntimeLifecycle() = default;
  /** One supervision pass; cheap enough to run every few tens of milliseconds. */
  virtual SupervisionResult Supervise() = 0;
  /** Stops every pod and releases the network; configuration, secrets and volumes stay. */
  virtual Status Teardown() = 0;
};

}  // namespace hpc::runtime
