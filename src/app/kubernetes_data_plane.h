// The agent's view of a data plane on Kubernetes (cp::DataPlaneAccess): one SlurmCluster
// resource and the operator that runs it, reached through the API as the agent's
// ServiceAccount (in the cluster) or a kubeconfig (outside). Its state is the SlurmCluster's
// status, workspaces the control plane dispatches become Workspace resources (labelled as the
// agent's: the only ones it deletes, once they are Stopped), and commands run through
// `pods/exec`: terminals and JupyterLab attached by `hpcplane kube-attach` on a pseudo-terminal of
// the agent's, so that they are processes of its own as on local pods.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "agent/data_plane_access.h"
#include "app/kubernetes_data_plane_options.h"
#include "runtime/kubernetes/api_client.h"
#include "runtime/kubernetes/kubernetes_runtime.h"

namespace hpc::app {

// Put on the Workspaces the agent creates: it deletes no other.
inline constexpr const char* kLabelDispatched = "hpcplane.io/dispatched-by";

class KubernetesDataPlane : public cp::DataPlaneAccess {
 public:
  static Result<std::unique_ptr<KubernetesDataPlane>> Open(KubernetesDataPlaneOptions options);

  Health CheckHealth() override;
  std::string ClusterName() const override { return options_.cluster; }
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

  std::string AgentCursorFile() const { return options_.state_dir + "/agent-window.json"; }

 private:
  KubernetesDataPlane(KubernetesDataPlaneOptions options, std::shared_ptr<runtime::kubernetes::ApiClient> api);
  std::string ResourcePath(const std::string& plural, const std::string& name = "") const;
  Result<api::SlurmCluster> LoadCluster();
  // `kube-attach` of `request` on a new pseudo-terminal.
  Result<PtyProcess> Attach(const runtime::kubernetes::PodExecRequest& request, bool tty, int cols, int rows);

  KubernetesDataPlaneOptions options_;
  std::shared_ptr<runtime::kubernetes::ApiClient> api_;
  runtime::kubernetes::KubernetesRuntime runtime_;
};

}  // namespace hpc::app
