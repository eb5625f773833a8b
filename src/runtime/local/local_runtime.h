// The local runtime: each pod is a supervised process tree in its own PID, mount, UTS and
// network namespaces on a per-cluster bridge. Everything it creates is recorded under its
// directory, so a later process (another CLI call, or the daemon after kill -9) can adopt
// running pods or remove what is left.
//
// Layout of `dir`:
//   configmaps/<name>/<key>   secrets/<name>/<key> (0700 dir, 0600 files)   volumes/<name>/
//   pods/<name>/{spec.json,state.json,launch.json,log,empty/<vol>/}   networkpolicies/<name>.json
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "runtime/local/gpu_driver_files.h"
#include "runtime/local/gpus.h"
#include "runtime/local/network.h"
#include "runtime/local/pod_cgroups.h"
#include "runtime/local/pod_init.h"
#include "runtime/pod_runtime.h"

namespace hpc::runtime::local {

class LocalRuntime : public PodRuntime, public RuntimeLifecycle {
 public:
  struct Options {
    std::string dir;
    std::string cluster_key;  // material for the network names (state dir + cluster name)
    std::string subnet;       // a.b.c.0/24
    std::string self_exe;     // the hpcplane binary, run as `__pod-init` in each pod
    std::string image_store;  // where pods' images are (image_store.h); empty: none
    GpuHost gpus;             // where the host's driver shows its GPUs (gpus.h)
    std::string gpu_claims_dir = kGpuClaimsDir;
    // Only the supervising process (the daemon) starts and restarts pods.
    bool supervise = false;
    std::chrono::milliseconds stop_grace{5000};
  };
  static Result<std::unique_ptr<LocalRuntime>> Create(Options options);

  Status ApplyConfigMap(const ConfigMap& cm) override;
  Result<std::optional<ConfigMap>> GetConfigMap(const std::string& name) override;
  Status DeleteConfigMap(const std::string& name) override;
  Status ApplySecret(const Secret& secret) override;
  Result<std::optional<Secret>> GetSecret(const std::string& name) override;
  Status DeleteSecret(const std::string& name) override;
  Status ApplyNetworkPolicy(const NetworkPolicy& policy) override;
  Result<std::optional<NetworkPolicy>> GetNetworkPolicy(const std::string& name) override;
  Status DeleteNetworkPolicy(const std::string& name) override;
  Status EnsureVolume(const Volume& volume) override;
  Status CreatePod(const PodSpec& spec) override;
  Status DeletePod(const std::string& name) override;
  // Its pods run here: there is no machine to wait for.
  Status ForgetPod(const std::string& name) override { return DeletePod(name); }
  Result<std::vector<PodStatus>> ListPods(const std::map<std::string, std::string>& selector) override;
  Result<std::optional<PodSpec>> GetPodSpec(const std::string& name) override;
  Result<ProcessResult> Exec(const std::string& pod, const ExecOptions& opts) override;
  Result<int> ExecInteractive(const std::string& pod, const ExecOptions& opts) override;
  Result<std::string> Logs(const std::string& pod, size_t tail_lines) override;
  /** The host command that runs `opts` in the pod, as Exec runs it: for a caller that runs it
   *  itself, e.g. on a pseudo-terminal (a terminal in the browser). */
  Result<std::vector<std::string>> ExecArgv(const std::string& pod, const ExecOptions& opts);

  /** Reaps, restarts with backoff, probes readiness. Only with Options::supervise. */
  SupervisionResult Supervise() override;
  Status Teardown() override;
  /** Host path of a volume; for the CLI's own use (e.g. printing where output landed). */
  std::string VolumePath(const std::string& name) const { return opts_.dir + "/volumes/" + name; }
  /** The cgroup hierarchy pods get on this host: kNone where it has none this runtime can use
   *  (pods then run unconfined; the memory limit is enforced by the supervisor). */
  CgroupHierarchy cgroup_hierarchy() const { return cgroups_.hierarchy(); }

 private:
  struct PodState;
  LocalRuntime(Options opts, Network net, PodCgroups cgroups)
      : opts_(std::move(opts)), network_(std::move(net)), cgroups_(std::move(cgroups)) {}

  std::string PodDir(const std::string& pod) const { return opts_.dir + "/pods/" + pod; }
  // Created by the pod's init once the pod is whole and its command started (pod_init.h).
  std::string StartedFile(const std::string& pod) const { return PodDir(pod) + "/started"; }
  // Whether the pod runs and its init has built it: what Running means, and what exec and
  // probes wait for.
  bool Started(const std::string& pod, const PodState& st) const;
  Result<PodState> LoadState(const std::string& pod) const;
  Status SaveState(const std::string& pod, const PodState& st) const;
  Status StartPod(const PodSpec& spec, PodState* st);
  // Supervision of one pod whose process runs: readiness, liveness and (without cgroups) its
  // memory limit; a hung or oversized pod is killed, and restarted as it exits.
  void WatchRunningPod(const std::string& name, const PodSpec& spec, PodState* st, int64_t now_ms);
  // Supervision of one pod whose process is gone: its exit recorded, then a restart by its
  // policy, with backoff. `before` is its state when this supervision began.
  void HandleExitedPod(const std::string& name, const PodSpec& spec, PodState* st, const PodState& before,
                       int64_t now_ms);
  // What the pod's init needs to build the pod: its root, mounts, command, user and cgroups.
  Result<LaunchPlan> PlanLaunch(const PodSpec& spec);
  // The GPUs the pod asks for, claimed on the host (gpus.h), into its plan.
  Status PlanGpus(const PodSpec& spec, LaunchPlan* plan);
  // The root the pod runs on: its image's, or the cluster's shared root made from it.
  // Holds the image of every pod this runtime has (ImageStore::Hold), at the supervisor's start.
  void HoldPodImages();
  Result<std::string> PodImageRoot(const PodSpec& spec, bool* writable);
  Status StopProcess(PodState* st);
  // Rewrites the hosts file every pod mounts at /etc/hosts from the pods' addresses.
  Status UpdateHosts();
  bool ProbeReady(const PodSpec& spec, const PodState& st);
  bool ProbeAlive(const PodSpec& spec, const PodState& st);
  Result<std::string> ResolveMountSource(const PodSpec& spec, const Mount& m);
  // Brings the cluster's nftables table (pod_firewall.h) in line with its policies and pods.
  Status SyncFirewall();
  std::string FirewallTable() const { return "hpcplane_" + network_.names().key; }

  Options opts_;
  Network network_;
  PodCgroups cgroups_;
  // The firewall script last loaded ("": no table); unknown until the first sync.
  std::optional<std::string> firewall_loaded_;
  std::map<pid_t, int> reaped_;  // exit statuses of our children, by pid
  // Supervision timers (steady-clock ms), kept in memory: a new daemon probes and starts at once.
  std::map<std::string, int64_t> next_probe_ms_;
  std::map<std::string, int64_t> next_start_ms_;
  std::map<std::string, int64_t> next_memory_check_ms_;
  std::map<std::string, int64_t> oom_kills_at_start_;  // the pod cgroup's OOM kill count when it started
  std::map<std::string, int64_t> next_liveness_ms_;
  std::map<std::string, int> liveness_failures_;   // in a row
  std::map<std::string, std::string> killed_why_;  // pod -> why it was killed (memory limit or
                                                   // liveness), until its exit is seen
};

// Resident memory (KiB) of the descendants of a process (/proc/<pid>/task/*/children), not
// counting the process itself: for a pod, what runs under its init.
int64_t DescendantsRssKiB(pid_t pid);

}  // namespace hpc::runtime::local
