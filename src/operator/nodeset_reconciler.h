// Reconciles one NodeSet: worker pods as Slurm dynamic nodes carrying the nodeset's feature,
// scaled to the desired count with PlanScale's rules (drain first, delete only drained idle
// workers, never touch admin drains, do nothing destructive without a view of Slurm).
// Status conditions:
//   Ready     True when the desired number of workers are registered and usable in Slurm.
//   Scaling   True while workers are being added, drained or removed.
//   SlurmVisible False when Slurm could not be asked; scale-down waits until it can.
//   WorkersHealthy False while health checks keep workers drained (until they pass or are
//             replaced).
//   HealthChecksSuspect True when more workers fail health checks than maxUnhealthy allows to
//             drain: the check itself may be wrong, and the rest are left in service.
//   Upgrading True while workers run an image the nodeset no longer runs (a rolling upgrade):
//             each is drained and removed once its jobs end, new workers take the queue.
#pragma once

#include <deque>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "api/types.h"
#include "operator/builders.h"
#include "operator/demand.h"
#include "operator/scale_down.h"
#include "runtime/pod_runtime.h"
#include "slurm/slurm_client.h"

namespace hpc::op {

// How long a ready worker may run without a node in Slurm before it is started again.
inline constexpr int64_t kUnregisteredGraceSeconds = 20;
// How long a lost worker's pod may outlive its deletion's grace period before it is forgotten:
// its machine would have confirmed by then, were it there.
inline constexpr int64_t kLostPodForgetAfterSeconds = 10;
// How long after slurmctld's start its workers are asked to register again.
inline constexpr int64_t kRegisterAgainAfterSeconds = 20;

class NodeSetReconciler {
 public:
  NodeSetReconciler(runtime::PodRuntime* rt, BuildInputs inputs, slurm::SlurmControl* control)
      : rt_(rt), in_(std::move(inputs)), control_(control) {}

  // `reader` is null when slurmrestd is not available; `jobs` is null when the job list could
  // not be read. The desired count is spec.replicas when pinned, else computed from demand.
  api::NodeSetStatus Reconcile(const api::SlurmCluster& c, const api::NodeSet& ns, slurm::SlurmReader* reader,
                               const PendingByPartition* pending);

  // Failed actions of the last Reconcile.
  int last_errors() const { return last_errors_; }

  // How long a ready worker may lack a node in Slurm (tests shorten it).
  void set_unregistered_grace(int64_t seconds) { unregistered_grace_ = seconds; }
  // When slurmctld's pod last started (unix seconds; 0 unknown): see RegisterWorkersAgain.
  void set_controller_started_at(int64_t t) { controller_started_at_ = t; }
  // Whether slurmctld runs the inputs' release (ClusterReconciler::controller_current): until it
  // does, no worker is created (it would run a newer slurmd than slurmctld) and none is retired.
  void set_controller_current(bool v) { controller_current_ = v; }

  // Whether the pending jobs handed to Reconcile were listed before Slurm's nodes were read (a
  // reused listing): a job may then count as pending while it already runs on a worker counted
  // busy, so such a listing may hold the worker count but never raise it.
  void set_pending_predates_nodes(bool v) { pending_predates_nodes_ = v; }
  // Whether the last Reconcile held back a scale-up for that reason: the next pass should list
  // jobs afresh.
  bool held_for_fresh_listing() const { return held_for_fresh_listing_; }

  // Removes every worker of a nodeset that no longer exists, with the same safety rules.
  Status RemoveNodeSet(const api::SlurmCluster& c, const api::NodeSet& ns, slurm::SlurmReader* reader);

 private:
  // What one pass saw and decided, handed from step to step.
  struct Pass {
    int64_t now = 0;
    std::vector<runtime::PodStatus> pods;           // the nodeset's worker pods
    std::map<std::string, slurm::SlurmNode> nodes;  // Slurm's nodes by name (when visible)
    bool visible = false;                           // Slurm answered
    std::string slurm_error = "slurmrestd is not ready";
    std::set<std::string> replaced;         // health replacements: gone for good, a new name takes over
    std::set<std::string> restarted;        // started again under the same name
    std::set<std::string> lost;             // on a machine that is gone: a new name takes over
    std::set<std::string> outdated;         // on an image the nodeset no longer runs: drained, then removed
    std::vector<std::string> earlier_pods;  // what ClearJobsOfEarlierPod did, for the events
    int desired = 0;
    std::string demand_note;
    ScalePlan plan;
    std::vector<std::string> errors;  // failed actions
  };
  // One pass is five steps: observe (pods, Slurm's nodes), repair (stuck, restarted, unhealthy,
  // unregistered workers; only with Slurm's view), decide (desired count, scale plan), act
  // (resume, create, drain, remove), forget (nodes whose pod is gone); then report (status).
  Status Observe(const api::SlurmCluster& c, const api::NodeSet& ns, slurm::SlurmReader* reader, Pass* pass);
  void Repair(const api::SlurmCluster& c, const api::NodeSet& ns, Pass* pass, api::NodeSetStatus* st);
  void Decide(const api::SlurmCluster& c, const api::NodeSet& ns, const PendingByPartition* pending, Pass* pass,
              api::NodeSetStatus* st);
  void Act(const api::SlurmCluster& c, const api::NodeSet& ns, Pass* pass);
  void ForgetOrphanNodes(const api::NodeSet& ns, Pass* pass);
  void Report(const api::SlurmCluster& c, const api::NodeSet& ns, const Pass& pass, api::NodeSetStatus* st);

  // Resets workers Slurm left ALLOCATED without a job (see SlurmNode::StuckAllocated).
  void RepairStuckNodes(const api::NodeSet& ns, std::map<std::string, slurm::SlurmNode>* nodes, int64_t now,
                        api::NodeSetStatus* st);
  // A worker pod that restarted lost every process, its jobs' included, but Slurm still counts
  // a job that started there moments before slurmd came back (slurmctld gives a new job time
  // to launch, and slurmd does not register again). Such a node is set DOWN and resumed, so
  // Slurm ends and requeues what it thinks runs there. An admin's drain is left alone.
  void ResetRestartedWorkers(const api::NodeSet& ns, const std::vector<runtime::PodStatus>& pods,
                             std::map<std::string, slurm::SlurmNode>* nodes, api::NodeSetStatus* st,
                             std::vector<std::string>* errors);
  // A worker whose machine is gone (its node powered off, its kubelet and containers with it):
  // Slurm set it DOWN for not responding and ended or requeued its jobs, and the runtime has
  // it not ready. Both must agree: a worker only cut off from the API server still runs its
  // jobs and is left alone. Its pod is deleted and a worker under a new name takes its place at
  // once; when the machine never confirms the deletion, the pod is forgotten
  // kLostPodForgetAfterSeconds after its grace period, and Slurm's record goes with the pod.
  // Returns the lost workers.
  std::set<std::string> ReplaceLostWorkers(const api::NodeSet& ns, const std::vector<runtime::PodStatus>& pods,
                                           const std::map<std::string, slurm::SlurmNode>& nodes, int64_t now,
                                           api::NodeSetStatus* st, std::vector<std::string>* errors);
  // A dynamic node registers once, when its slurmd starts. slurmctld restarted from state saved
  // before that registration (kill -9 within its 5 s save window) has no such node, and the
  // running slurmd never registers again: the pod runs but adds no capacity. A ready worker
  // that Slurm (answering) has not listed for unregistered_grace_ is deleted, so the
  // nodeset starts it again and its new slurmd registers. Returns the workers deleted.
  std::set<std::string> RestartUnregisteredWorkers(const api::NodeSet& ns, const std::vector<runtime::PodStatus>& pods,
                                                   const std::map<std::string, slurm::SlurmNode>& nodes, int64_t now,
                                                   api::NodeSetStatus* st, std::vector<std::string>* errors);
  // slurmctld restarted from saved state may count jobs running that ended while it was away
  // (their end went to the dead process); it notices only when the node registers again, which
  // a running slurmd does on its own every ~7 minutes. Once per controller start, when it has
  // run kRegisterAgainAfterSeconds (past BatchStartTimeout, so Slurm ends such a job when the
  // node does not list it), every ready worker's slurmd is sent SIGHUP: it reloads its config
  // and registers at once. Nothing else changes on the worker; its jobs run on.
  void RegisterWorkersAgain(const api::NodeSet& ns, const std::vector<runtime::PodStatus>& pods,
                            const std::map<std::string, slurm::SlurmNode>& nodes, int64_t now, api::NodeSetStatus* st);
  // A worker about to be created under a name Slurm lists busy: its jobs ran on an earlier pod of
  // that name (the cluster was down and up again, restarted on another release, or the pod
  // was deleted), which ended them. slurmctld learns of it only from a slurmd's first
  // registration, and only for jobs older than BatchStartTimeout then: one that started just
  // before would stay RUNNING for ever, holding the worker. The node is reset (DOWN, then
  // RESUME) before the pod starts, so Slurm ends and requeues them; an admin's drain is left.
  void ClearJobsOfEarlierPod(const api::NodeSet& ns, const std::string& name, Pass* pass);
  // A rolling upgrade's workers: each one on an image other than the nodeset's (WorkerImage) is
  // drained ("hpcplane: upgrade: ...") so that new workers take the queue, and removed by the
  // scaling plan once its jobs end; one that never registered is deleted at once. An admin's
  // drain keeps its worker (and the admin's say). Past spec.upgrade.drainDeadline its jobs are
  // requeued or cancelled as spec.upgrade.afterDeadline says (Wait: never). Into pass->outdated.
  void RetireOutdatedWorkers(const api::SlurmCluster& c, const api::NodeSet& ns, Pass* pass, api::NodeSetStatus* st);
  // Drains, resumes and replaces workers by their health reports (operator/health_policy.h).
  // Updates `nodes` to what Slurm shows after the actions; returns the workers replaced.
  std::set<std::string> ApplyHealth(const api::SlurmCluster& c, const api::NodeSet& ns,
                                    const std::vector<runtime::PodStatus>& pods,
                                    std::map<std::string, slurm::SlurmNode>* nodes, int64_t now, api::NodeSetStatus* st,
                                    std::vector<std::string>* errors);
  // How many more workers the rate limits allow now; -1 when unlimited.
  int Allowance(std::deque<int64_t>* history, int per_minute, int64_t now);

  runtime::PodRuntime* rt_;
  BuildInputs in_;
  slurm::SlurmControl* control_;
  bool controller_current_ = true;
  std::map<std::string, int64_t> jobs_ended_at_;  // worker -> when its jobs were last requeued or cancelled
  std::map<std::string, std::deque<int64_t>> created_, drained_;       // unix seconds, per nodeset
  std::map<std::string, std::deque<int64_t>> replaced_;                // unix seconds, per nodeset
  std::map<std::string, std::map<std::string, int64_t>> stuck_since_;  // nodeset -> node -> first seen
  std::map<std::string, int> restarts_seen_;           // worker pod -> its restart count at the last pass
  std::map<std::string, int64_t> unregistered_since_;  // ready worker pod -> first pass Slurm lacked its node
  int64_t unregistered_grace_ = kUnregisteredGraceSeconds;
  bool pending_predates_nodes_ = false;
  bool held_for_fresh_listing_ = false;
  int64_t controller_started_at_ = 0;
  std::map<std::string, int64_t> registered_again_for_;  // nodeset -> the controller start handled
  int last_errors_ = 0;
};

// Autoscaled: spec.replicas unset.
inline bool IsAutoscaled(const api::NodeSet& ns) { return !ns.spec.replicas.has_value(); }
// Desired workers from the spec: spec.replicas (or minReplicas) clamped to min..max.
int DesiredFromSpec(const api::SlurmCluster& c, const api::NodeSet& ns);

}  // namespace hpc::op
