// An in-memory data plane behind the agent's DataPlaneAccess: workspaces in a map, every
// command recorded and answered by `controller` / `workspace` handlers (empty output, exit 0,
// when unset), so agent logic is tested without a cluster.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "agent/data_plane_access.h"

namespace hpc::fakes {

class FakeDataPlane : public cp::DataPlaneAccess {
 public:
  std::string cluster = "c1";
  Health health;
  std::map<std::string, api::Workspace> workspaces;
  std::vector<cp::WorkspaceCreation> created;
  Status create_result = Status::Ok();             // what CreateWorkspace answers
  std::vector<std::vector<std::string>> commands;  // every InController / InWorkspace argv
  std::function<Result<std::string>(const std::vector<std::string>&)> controller;
  std::function<ProcessResult(const api::Workspace&, const std::vector<std::string>&)> workspace;

  std::vector<cp::LiveNodeSet> nodesets;
  // PodsForJobFiles answers `job_pods`; AsUserInPod's commands are kept as (pod, user, argv)
  // and answered by `in_pod` (Unavailable when unset).
  std::vector<std::string> job_pods = {"c1-cpu-0"};
  std::vector<std::tuple<std::string, std::string, std::vector<std::string>>> pod_commands;
  std::function<Result<ProcessResult>(const std::string& pod, const std::vector<std::string>&)> in_pod;

  Health CheckHealth() override { return health; }
  Result<std::vector<cp::LiveNodeSet>> NodeSets() override { return nodesets; }
  std::string ClusterName() const override { return cluster; }
  Result<std::optional<api::Workspace>> FindWorkspace(const std::string& id) override {
    auto it = workspaces.find(id);
    return it == workspaces.end() ? std::optional<api::Workspace>() : std::optional(it->second);
  }
  Status CreateWorkspace(const cp::WorkspaceCreation& w) override {
    if (!create_result.ok()) return create_result;
    created.push_back(w);
    api::Workspace ws;
    ws.metadata.name = w.id;
    ws.spec.user.name = w.user;
    ws.spec.project = w.project;
    workspaces[w.id] = ws;
    return Status::Ok();
  }
  Status StopWorkspace(const std::string& id, bool cancel_jobs) override {
    auto it = workspaces.find(id);
    if (it == workspaces.end()) return Status::NotFound("workspace " + id);
    it->second.spec.stopping = true;
    it->second.spec.cancel_jobs = it->second.spec.cancel_jobs || cancel_jobs;
    return Status::Ok();
  }
  Result<std::string> InController(const std::vector<std::string>& argv) override {
    commands.push_back(argv);
    return controller ? controller(argv) : Result<std::string>(std::string());
  }
  Result<ProcessResult> InWorkspace(const api::Workspace& w, const std::vector<std::string>& argv,
                                    const std::string&) override {
    commands.push_back(argv);
    if (workspace) return workspace(w, argv);
    ProcessResult r;
    r.exit_code = 0;
    return r;
  }
  // StartShell runs this on a real pseudo-terminal here (a local shell stands for the pod's).
  std::vector<std::string> shell = {"/bin/sh", "-i"};
  std::vector<std::string> shells_started;  // workspace ids
  Result<PtyProcess> StartShell(const api::Workspace& w, int cols, int rows) override {
    shells_started.push_back(w.metadata.name);
    return SpawnOnPty(shell, cols, rows);
  }
  // StartLab answers with this (tests start a stand-in JupyterLab here); unset: no JupyterLab.
  std::function<Result<cp::LabProcess>(const api::Workspace&, const cp::LabLaunch&)> lab;
  std::vector<std::string> labs_started;  // workspace ids
  Result<cp::LabProcess> StartLab(const api::Workspace& w, const cp::LabLaunch& launch) override {
    labs_started.push_back(w.metadata.name);
    if (lab) return lab(w, launch);
    return Status::FailedPrecondition("this environment has no JupyterLab");
  }
  Result<std::vector<std::string>> PodsForJobFiles(const std::string& node, const std::string&) override {
    std::vector<std::string> pods;
    for (const auto& p : job_pods) {
      // A worker is a candidate only as the job's own node; login pods always are.
      if (p == node || p.find("login") != std::string::npos) pods.push_back(p);
    }
    return pods;
  }
  Result<ProcessResult> AsUserInPod(const std::string& pod, const std::string& user,
                                    const std::vector<std::string>& argv) override {
    pod_commands.emplace_back(pod, user, argv);
    if (in_pod) return in_pod(pod, argv);
    return Status::Unavailable("no pod");
  }
};

}  // namespace hpc::fakes
