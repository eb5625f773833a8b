// The agent's view of a data plane hosted by this machine's operator (cp::DataPlaneAccess): the
// cluster's state from the operator's store, workspaces through the same path as `hpcplane
// workspace launch` and `stop`, and commands through a client runtime opened on first use.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "agent/data_plane_access.h"
#include "operator/cluster_paths.h"
#include "runtime/pod_runtime.h"

namespace hpc::app {

class LocalDataPlane : public cp::DataPlaneAccess {
 public:
  LocalDataPlane(op::ClusterPaths paths, std::string self_exe);

  Health CheckHealth() override;
  std::string ClusterName() const override { return paths_.name; }
  Result<std::vector<cp::LiveNodeSet>> NodeSets() override;
  Result<std::optional<api::Workspace>> FindWorkspace(const std::string& id) override;
  Status CreateWorkspace(const cp::WorkspaceCreation& w) override;
  Status StopWorkspace(const std::string& id, bool cancel_jobs) override;
  Result<std::string> InController(const std::vector<std::string>& argv) override;
  Result<ProcessResult> InWorkspace(const api::Workspace& w, const std::vector<std::string>& argv,
                                    const std::string& stdin_data) override;
  Result<PtyProcess> StartShell(const api::Workspace& w, int cols, int rows) override;
  Result<cp::LabProcess> StartLab(const api::Workspace& w, const cp::LabLaunch& launch) override;
  Result<std::vector<std::string>> PodsForJobFiles(const std::string& node, const std::string& user) override;
  Result<ProcessResult> AsUserInPod(const std::string& pod, const std::string& user,
                                    const std::vector<std::string>& argv) override;

  // Where the agent keeps its job window (in the cluster's state directory).
  std::string AgentCursorFile() const { return paths_.Dir() + "/agent-window.json"; }

 private:
  Result<runtime::PodRuntime*> Runtime();

  op::ClusterPaths paths_;
  std::string self_exe_;
  std::mutex runtime_mu_;  // the agent's relay thread uses it beside its main loop
  std::unique_ptr<runtime::PodRuntime> runtime_;
};

}  // namespace hpc::app
