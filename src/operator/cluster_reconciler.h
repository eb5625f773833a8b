// Reconciles a SlurmCluster: keys, volumes, slurm.conf and users, then the munge pod (munge comes
// first: everything authenticates through it) and beside it or after it the sackd, controller,
// REST API and login pods. With
// accounting, MariaDB and slurmdbd start beside them: slurmctld does not wait for them (it
// queues job records until slurmdbd answers), so a late database never blocks the cluster.
// Status conditions (computed from pod and Slurm state):
//   Ready       True when every component pod is ready and slurmctld answers through slurmrestd.
//   Progressing True while a component is being created or has not become ready yet.
//   Degraded    True when a component has restarted and is not ready, or Slurm does not answer
//               while its pods run.
//   Reconfiguring True while a slurm.conf change waits for the controller pod to read the new
//               file before slurmctld is told; a new operator process takes it up from here.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "api/types.h"
#include "operator/builders.h"
#include "operator/steps.h"
#include "runtime/pod_runtime.h"
#include "slurm/controllers.h"
#include "slurm/slurm_client.h"

namespace hpc::op {

inline constexpr const char* kConditionReconfiguring = "Reconfiguring";

class ClusterReconciler {
 public:
  using ReaderFactory = std::function<std::unique_ptr<slurm::SlurmReader>(const std::string& host, int port)>;

  ClusterReconciler(runtime::PodRuntime* rt, BuildInputs inputs, ReaderFactory readers, slurm::SlurmControl* control)
      : rt_(rt), in_(std::move(inputs)), readers_(std::move(readers)), control_(control) {}

  /** Converges the cluster's objects and returns its new status (previous status in `c`). */
  /** `extra_users` are the workspaces' users, added to slurm-users next to the cluster's own;
   * `dataset_groups` the groups of the workspaces' project datasets. */
  api::SlurmClusterStatus Reconcile(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                                    const std::vector<api::ClusterUser>& extra_users = {},
                                    const std::vector<DatasetGroup>& dataset_groups = {});

  /** The Slurm reader of the last reconcile when Slurm answered its ping; else null, so a
   * pass where slurmctld is away does not wait on one timeout per query (and fails closed). */
  slurm::SlurmReader* reader() const { return slurm_answered_ ? reader_.get() : nullptr; }
  bool controller_ready() const { return controller_ready_; }
  // Unix seconds the controller pod's current run started (0 when not running).
  int64_t controller_started_at() const { return controller_started_at_; }
  // Failed steps of the last Reconcile.
  int last_errors() const { return last_errors_; }
  bool slurmdbd_ready() const { return slurmdbd_ready_; }
  // Whether slurmctld runs the Slurm of this reconciler's inputs, ready: a rolling upgrade starts
  // workers on the new release only then (a slurmd is never newer than its slurmctld).
  bool controller_current() const { return controller_current_; }
  // Users changed since the partitions last resolved their AllowGroups, and slurmctld's pod sees
  // the new /etc/group (on Kubernetes a running pod sees a changed config map seconds to a
  // minute later; a partition updated before would resolve the old groups): true once, then
  // cleared, so the caller updates the partitions now. While unseen it stays pending.
  bool TakeUsersChanged();
  void MarkUsersChanged() { users_changed_ = true; }
  // A user change is not yet applied to the partitions (workspaces of new users are not ready).
  bool users_pending() const { return users_changed_; }
  // Whether slurmctld's pod has the users' file as last applied (asked of the pod while it has
  // not; then remembered until the users change again). Apart from the partitions' state: a
  // partition that fails to update must not hold back accounting.
  bool UsersFileCurrent();
  slurm::SlurmControl* control() const { return control_; }
  // Where Slurm's commands run, set each pass to the controller pod that serves (not owned).
  void SetCommandPod(slurm::CommandPod* pod) { command_pod_ = pod; }

 private:
  Status EnsureSecrets(const api::SlurmCluster& c);
  Status EnsureVolumes(const api::SlurmCluster& c);
  Status EnsureNetworkPolicies(const api::SlurmCluster& c);
  Status EnsureConfig(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                      const std::vector<api::ClusterUser>& extra_users,
                      const std::vector<DatasetGroup>& dataset_groups);
  // Creates the pod (or replaces it when its spec changed); OK once it is ready. `started_at`,
  // when given, receives the start of its current run; `current`, whether the pod that is ready
  // runs `spec` (not an older one kept by Slurm's upgrade order: MayChangeRelease).
  Status EnsurePod(const runtime::PodSpec& spec, const std::string& component, api::SlurmClusterStatus* st,
                   int64_t* started_at = nullptr, bool* current = nullptr);
  // Slurm's upgrade order, for a pod whose new spec runs another Slurm release than its pod
  // does: slurmdbd (and what has no Slurm in it) first, then the controllers once slurmdbd runs
  // the new release, then sackd once slurmctld does, then slurmrestd and the login pod. A pod that
  // may not move yet keeps running as it is; '' when it may move now, else what it waits for.
  std::string ReleaseChangeWaitsFor(const std::string& component) const;
  // The releases the cluster's pods run, this pass: the oldest one into in_.config_release (Slurm's
  // files are written for it) and, into `st`, the condition Upgrading while any pod runs another
  // release than in_.release.
  Status ObserveReleases(const api::SlurmCluster& c, api::SlurmClusterStatus* st);
  // The pod whose socket clients authenticate through, without sidecars: munged's before 23.11,
  // sackd's with auth/slurm.
  Status EnsureAuthPod(const api::SlurmCluster& c, api::SlurmClusterStatus* st);
  // The backup slurmctld's pod where the spec asks for one; gone where it does not.
  Status EnsureBackupController(const api::SlurmCluster& c, api::SlurmClusterStatus* st);

  // The cluster's components as steps, in order; each pod's step records in `st` how it is.
  std::vector<Step> ComponentSteps(const api::SlurmCluster& c, const std::vector<api::NodeSet>& nodesets,
                                   const std::vector<api::ClusterUser>& extra_users,
                                   const std::vector<DatasetGroup>& dataset_groups, api::SlurmClusterStatus* st);
  // The pods' endpoints into `st`, a reader for slurmrestd's, and Slurm's answer through it: its
  // version, or (returned) why it does not answer. True when Slurm answered.
  bool ObserveSlurm(const api::SlurmCluster& c, api::SlurmClusterStatus* st, std::string* slurm_error);
  // Which controller serves into `st` (SlurmClusterStatus::leading_controller), from Slurm's
  // heartbeat where there is a backup, and the command pod with it; either controller's pod
  // running makes controller_ready().
  void ObserveLeader(const api::SlurmCluster& c, api::SlurmClusterStatus* st);
  // Ready, Progressing and Degraded from the steps' outcome and Slurm's answer.
  void SetConditions(api::SlurmClusterStatus* st, const StepsOutcome& outcome, bool slurm_ok,
                     const std::string& slurm_error);

  runtime::PodRuntime* rt_;
  BuildInputs in_;
  ReaderFactory readers_;
  slurm::SlurmControl* control_;
  slurm::CommandPod* command_pod_ = nullptr;
  std::unique_ptr<slurm::SlurmReader> reader_;
  std::string reader_endpoint_;
  bool controller_ready_ = false;
  bool backup_ready_ = false;  // the backup controller's pod, this pass
  int64_t controller_started_at_ = 0;
  int last_errors_ = 0;
  bool slurmdbd_ready_ = false;
  // Set by their steps each pass (sackd's, earlier in a pass, reads the last one's): slurmdbd (or
  // no accounting) and slurmctld run in_.release and are ready.
  bool slurmdbd_current_ = false;
  bool controller_current_ = false;
  bool auth_pod_current_ = false;  // munged's or sackd's pod (none with sidecars)
  bool slurm_answered_ = false;
  bool users_changed_ = false;
  bool users_file_stale_ = true;  // slurmctld's pod not yet known to have the users' file
  std::string users_group_;       // the /etc/group last applied
  std::string controller_pod_;    // of the cluster last reconciled
  // slurm.conf as written when it changed beyond what is applied in place: slurmctld is told to
  // reconfigure once the controller pod reads this content (a kubelet updates a mounted
  // ConfigMap tens of seconds after it changed; told before, slurmctld would reread the old).
  std::string reconfigure_wanted_;
  bool status_read_ = false;  // the condition Reconfiguring of an earlier process taken up
  Status ReconfigureOnceMounted();
  // BuildInputs::controller_config_pushed: writes slurm-config's files into the controller pod
  // when they differ from what was last written to the controller as it runs now (its start
  // time), or this process has written nothing yet.
  Status PushControllerConfig(const runtime::ConfigMap& cm);
  std::map<std::string, std::string> pushed_config_;
  bool other_auth_pod_gone_ = false;  // EnsureAuthPod's one look for the other authentication's pod
  int64_t pushed_to_controller_started_at_ = -1;
  bool degraded_ = false;
  bool rest_ready_ = false;      // slurmrestd's pod, this pass
  bool database_ready_ = false;  // MariaDB's pod, this pass
};

}  // namespace hpc::op
