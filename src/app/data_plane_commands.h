// What every data plane runs for the agent, whichever runtime hosts it: the same user, shell
// environment and directory for a workspace's commands, terminal and JupyterLab, and the same
// choice of pods where a job's files may be (cp::DataPlaneAccess says what each is for).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "agent/data_plane_access.h"
#include "api/types.h"
#include "operator/workspace_request.h"
#include "runtime/pod_runtime.h"

namespace hpc::app {

// The data plane's health as its cluster's status says: healthy when Ready, else its reason; a
// backup controller serving in the primary's stead is said too (a reason an admin acts on).
cp::DataPlaneAccess::Health HealthOf(const api::SlurmCluster& c);

// The request that creates a workspace the control plane dispatched (op::BuildWorkspace).
op::WorkspaceRequest WorkspaceRequestFor(const cp::WorkspaceCreation& c);

// `argv` as SlurmUser in the controller pod, Slurm's times as unix seconds (sacct, scontrol).
runtime::ExecOptions ControllerCommand(const std::vector<std::string>& argv);
// Its output, or an error naming the command and its stderr when it did not exit 0.
Result<std::string> OutputOf(const std::vector<std::string>& argv, const Result<ProcessResult>& ran);
// ControllerCommand(argv) in `serving` (the cluster's status: the pod of the controller that
// serves; empty: the primary's), else, where that pod cannot run it or does not answer in time
// (gone with its machine), in the other controller's pod, if the cluster has a backup.
Result<std::string> InControllerPod(runtime::PodRuntime* rt, const std::string& cluster,
                                    const std::vector<std::string>& argv, const std::string& serving = "");

// `argv` as the workspace's user in its login pod, with its shell environment (token,
// partition), in its dataset directory; never as root.
runtime::ExecOptions WorkspaceCommand(const api::Workspace& w, const std::vector<std::string>& argv);
// An interactive bash for a terminal in the browser.
runtime::ExecOptions WorkspaceShell(const api::Workspace& w);
// JupyterLab's token reaches it through a file in the login pod (0600, the user's), written by
// LabTokenWriter with the token on its stdin and removed by the command that starts the lab: it is
// on no command line, in no environment listing and in no exec request (an API server's audit log
// records every exec's command).
std::string LabTokenFile(const cp::LabLaunch& launch);
std::vector<std::string> LabTokenWriter(const cp::LabLaunch& launch);
// JupyterLab on `ip` (the login pod's address, where the agent reaches it), its token read from
// LabTokenFile.
runtime::ExecOptions WorkspaceLab(const api::Workspace& w, const cp::LabLaunch& launch, const std::string& ip);
// Whether the login pod's environment has JupyterLab, and the error that says it has not.
inline const std::vector<std::string> kFindJupyterLab = {"sh", "-c", "command -v jupyter-lab"};
Status NoJupyterLab(const api::Workspace& w);

// The running pods where a job's files may be, best first: the job's worker `node` while it
// runs, the login pods of `user`'s workspaces (`workspace_user` names a workspace's user, empty
// when unknown), the cluster's login pod.
std::vector<std::string> PodsForJobFiles(const std::vector<runtime::PodStatus>& pods, const std::string& node,
                                         const std::string& user,
                                         const std::function<std::string(const std::string&)>& workspace_user);

}  // namespace hpc::app
