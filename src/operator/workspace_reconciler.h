// Reconciles one Workspace. Running: the project's dataset volumes, the user's Slurm token
// (a JWT signed with the cluster key, rewritten when a third of its lifetime is left), and the
// login pod running as the user. Stopping: the partition drains (the derived nodeset does
// that), the reconciler waits for the partition's jobs to end or cancels them (--cancel-jobs),
// then removes the login pod, waits until the workers are gone from the runtime and from Slurm,
// and removes the token. Without Slurm's job list it waits: nothing is removed blind.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "operator/builders.h"
#include "runtime/pod_runtime.h"
#include "slurm/slurm_client.h"

namespace hpc::op {

// Jobs of a partition that have not ended; nullopt when the job list is unknown.
std::optional<int> ActiveJobs(const std::vector<slurm::SlurmJob>* jobs, const std::string& partition);
// When a workspace's token is renewed: with a third of its lifetime left (unix seconds).
int64_t TokenRenewAt(const api::Workspace& w, const api::WorkspaceStatus& st);

struct WorkspaceView {
  const std::vector<slurm::SlurmJob>* jobs = nullptr;    // null: Slurm's job list is unknown
  const std::vector<slurm::SlurmNode>* nodes = nullptr;  // null: Slurm's node list is unknown
  const api::NodeSetStatus* nodeset = nullptr;           // the workspace nodeset's last status
  bool accounting_ready = true;                          // the user's association exists
  bool users_ready = true;  // slurmctld sees every user and its partitions resolved their groups
  const std::vector<std::string>* partitions = nullptr;  // Slurm's partitions; null: unknown
  // slurmctld runs the inputs' release: a login pod moves to another release only then (Slurm's
  // clients are never newer than slurmctld; ClusterReconciler::ReleaseChangeWaitsFor).
  bool controller_current = true;
};

struct WorkspaceOutcome {
  api::WorkspaceStatus status;
  bool remove = false;  // stopped: the record can go
};

class WorkspaceReconciler {
 public:
  WorkspaceReconciler(runtime::PodRuntime* rt, BuildInputs inputs, slurm::SlurmControl* control)
      : rt_(rt), in_(std::move(inputs)), control_(control) {}

  WorkspaceOutcome Reconcile(const api::SlurmCluster& c, const api::Workspace& w, const WorkspaceView& view);

 private:
  Status EnsureToken(const api::Workspace& w, api::WorkspaceStatus* st);
  WorkspaceOutcome Run(const api::SlurmCluster& c, const api::Workspace& w, const WorkspaceView& view);
  WorkspaceOutcome Stop(const api::Workspace& w, const WorkspaceView& view);

  runtime::PodRuntime* rt_;
  BuildInputs in_;
  slurm::SlurmControl* control_;
};

}  // namespace hpc::op
