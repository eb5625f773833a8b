#include "operator/workspace_reconciler.h"

#include <algorithm>

#include "operator/dataset_volume.h"
#include "operator/steps.h"
#include "operator/workspace.h"

#include <spdlog/spdlog.h>

#include "common/jwt.h"
#include "operator/conditions.h"

namespace hpc::op {

std::optional<int> ActiveJobs(const std::vector<slurm::SlurmJob>* jobs, const std::string& partition) {
  if (!jobs) return std::nullopt;
  int n = 0;
  for (const auto& j : *jobs) {
    if (j.partition == partition && !j.Finished()) ++n;
  }
  return n;
}

int64_t TokenRenewAt(const api::Workspace& w, const api::WorkspaceStatus& st) {
  return st.token_expires - w.spec.token_lifetime_seconds / 3;
}

Status WorkspaceReconciler::EnsureToken(const api::Workspace& w, api::WorkspaceStatus* st) {
  const std::string name = WorkspaceTokenSecretName(w);
  int64_t now = jwt::UnixNow();
  ASSIGN_OR_RETURN(auto existing, rt_->GetSecret(name));
  if (existing && existing->data.count("expires")) {
    int64_t expires = std::atoll(existing->data.at("expires").c_str());
    // Renewed with a third of the lifetime left, so a command started now still has time.
    api::WorkspaceStatus current;
    current.token_expires = expires;
    if (now < TokenRenewAt(w, current) && existing->owner_uid == w.spec.user.uid) {
      st->token_expires = expires;
      return Status::Ok();
    }
  }
  ASSIGN_OR_RETURN(auto key, rt_->GetSecret(kSecretJwt));
  if (!key) return Status::FailedPrecondition("waiting for the cluster's JWT key");
  int64_t expires = now + w.spec.token_lifetime_seconds;
  std::string token = jwt::Sign({w.spec.user.name, now, expires}, key->data.at("jwt_hs256.key"));
  RETURN_IF_ERROR(rt_->ApplySecret(
      {name, {{"token", token}, {"expires", std::to_string(expires)}}, w.spec.user.uid, w.spec.user.gid}));
  spdlog::info("workspace {}: token for {} issued, valid until {}", w.metadata.name, w.spec.user.name, expires);
  st->token_expires = expires;
  return Status::Ok();
}

WorkspaceOutcome WorkspaceReconciler::Reconcile(const api::SlurmCluster& c, const api::Workspace& w,
                                                const WorkspaceView& view) {
  return w.spec.stopping ? Stop(w, view) : Run(c, w, view);
}

WorkspaceOutcome WorkspaceReconciler::Run(const api::SlurmCluster& c, const api::Workspace& w,
                                          const WorkspaceView& view) {
  WorkspaceOutcome out;
  auto& st = out.status;
  st = w.status;
  st.phase = "Pending";
  const runtime::PodSpec login = BuildWorkspaceLoginPod(c, w, in_);
  // Each step needs the ones before it: the login pod mounts the datasets, token and tools.
  const std::vector<Step> steps = {
      {"datasets",
       [&] {
         for (const auto& d : w.spec.datasets) RETURN_IF_ERROR(EnsureDatasetVolume(rt_, c, WorkspaceDataset(w, d)));
         return Status::Ok();
       },
       true},
      {"token", [&] { return EnsureToken(w, &st); }, true},
      {"tools", [&] { return rt_->ApplyConfigMap(BuildWorkspaceToolsConfigMap()); }, true},
      {"login",
       [&] {
         auto existing = rt_->GetPodSpec(login.name);
         bool kept = false;  // on the release before, until slurmctld runs the new one
         if (existing.ok() && *existing && !(**existing == login)) {
           const auto from = ReleaseOfImage(in_, (*existing)->image), to = ReleaseOfImage(in_, login.image);
           kept = !view.controller_current && from && to && from->Series() != to->Series();
           if (!kept) (void)rt_->DeletePod(login.name);
         }
         if (!kept) RETURN_IF_ERROR(rt_->CreatePod(login));
         bool ready = false;
         if (auto pods = rt_->ListPods({{kLabelWorkspace, w.metadata.name}}); pods.ok()) {
           for (const auto& p : *pods) ready = ready || (p.name == login.name && p.ready);
         }
         st.active_jobs = ActiveJobs(view.jobs, w.metadata.name).value_or(st.active_jobs);
         if (!ready) return Status::FailedPrecondition(fmt::format("waiting for login pod {}", login.name));
         return Status::Ok();
       },
       true},
      {"user",
       [&] {
         if (view.users_ready) return Status::Ok();
         return Status::FailedPrecondition(
             fmt::format("waiting for slurmctld to see user {} and its partition to allow it", w.spec.user.name));
       },
       true},
      {"accounting",
       [&] {
         if (view.accounting_ready) return Status::Ok();
         return Status::FailedPrecondition(fmt::format("waiting for accounting to know user {}", w.spec.user.name));
       },
       true},
  };
  const StepsOutcome outcome = RunSteps(fmt::format("workspace {}", w.metadata.name), steps);
  if (!outcome.done()) {
    st.message = outcome.FirstProblem();
    SetCondition(&st.conditions, "Ready", false, "Waiting", st.message);
    return out;
  }
  st.phase = "Ready";
  st.message = fmt::format("shell: hpcplane workspace shell {}", w.metadata.name);
  SetCondition(&st.conditions, "Ready", true, "LoginReady", "login pod, token and partition are in place");
  return out;
}

WorkspaceOutcome WorkspaceReconciler::Stop(const api::Workspace& w, const WorkspaceView& view) {
  WorkspaceOutcome out;
  auto& st = out.status;
  st = w.status;
  st.phase = "Stopping";
  SetCondition(&st.conditions, "Ready", false, "Stopping", "the workspace is stopping");
  auto active = ActiveJobs(view.jobs, w.metadata.name);
  if (!active) {
    st.message = "waiting: Slurm's job list is unavailable, nothing is removed until it is";
    return out;
  }
  st.active_jobs = *active;
  if (*active > 0) {
    if (w.spec.cancel_jobs) {
      if (Status s = control_->CancelPartitionJobs(w.metadata.name); !s.ok()) spdlog::warn("{}", s.message());
      st.message = fmt::format("cancelling {} jobs in partition {}", *active, w.metadata.name);
    } else {
      st.message = fmt::format("waiting for {} jobs in partition {} to finish (--cancel-jobs cancels them)", *active,
                               w.metadata.name);
    }
    return out;
  }
  (void)rt_->DeletePod(WorkspaceLoginPodName(w));
  // The derived nodeset is pinned to zero now; its reconciler drains and removes the workers.
  int workers = view.nodeset ? view.nodeset->replicas : 0;
  if (!view.nodes) {
    st.message = "waiting: Slurm's node list is unavailable";
    return out;
  }
  int in_slurm = 0;
  for (const auto& n : *view.nodes) in_slurm += n.features.count(w.metadata.name) ? 1 : 0;
  if (workers > 0 || in_slurm > 0) {
    st.message = fmt::format("removing workers ({} pods, {} Slurm nodes left)", workers, in_slurm);
    return out;
  }
  // Released: its partition leaves Slurm now; the workspace is gone only once Slurm agrees, so
  // that `workspace stop` returning means squeue and sinfo no longer show it.
  st.released = true;
  if (!view.partitions) {
    st.message = "waiting: Slurm's partition list is unavailable";
    return out;
  }
  if (std::find(view.partitions->begin(), view.partitions->end(), w.metadata.name) != view.partitions->end()) {
    st.message = fmt::format("removing partition {}", w.metadata.name);
    return out;
  }
  (void)rt_->DeleteSecret(WorkspaceTokenSecretName(w));
  st.message = "stopped";
  out.remove = true;
  return out;
}

}  // namespace hpc::op
