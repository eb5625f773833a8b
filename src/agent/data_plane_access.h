// What the agent needs of the data plane it speaks for, and nothing more: the cluster's health,
// its workspaces (look one up, create one, stop one) and commands in the controller pod and in a
// workspace's login pod. The wiring layer implements it over the operator's store and a runtime
// (src/app/local_data_plane.h); tests implement it in memory. The agent never opens the
// operator's files or a runtime itself.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "common/pty.h"
#include "common/result.h"
#include "common/subprocess.h"
#include "messages/live_cluster.h"

namespace hpc::cp {

// A workspace the control plane wants created here (from its WorkspaceRecord).
struct WorkspaceCreation {
  std::string id;
  std::string user;  // the platform user
  int64_t uid = 0;   // the same on every data plane
  bool admin = false;
  std::string project;
  std::string tier;
  int max_workers = 1;
  int64_t idle_timeout_seconds = 300;
  int64_t token_lifetime_seconds = 8 * 3600;
  std::vector<std::string> datasets;
  std::string environment;  // the login pod's workspace environment; empty: the cluster's
};

// JupyterLab for a workspace (served through the server: messages/relay_messages.h): where it serves and its only
// credential.
struct LabLaunch {
  std::string base_url;  // the path it serves under, with the trailing slash
  std::string token;     // in a file it reads and removes at its start, never on a command line
  int port = 0;
};
struct LabProcess {
  PtyProcess process;  // on a pseudo-terminal: the caller drains what it logs, owns fd and pid
  std::string host;    // where the agent reaches it
  int port = 0;
};

class DataPlaneAccess {
 public:
  virtual ~DataPlaneAccess() = default;

  struct Health {
    bool healthy = false;
    std::vector<std::string> reasons;  // why not, when not
    std::map<std::string, std::string> component_versions;
    std::string leading_controller;  // api::SlurmClusterStatus::leading_controller
  };
  // The cluster's state as its operator reports it; not healthy when no operator runs.
  virtual Health CheckHealth() = 0;
  virtual std::string ClusterName() const = 0;
  // The cluster's nodesets (workspaces' included) with their workers as the operator last
  // counted them.
  virtual Result<std::vector<LiveNodeSet>> NodeSets() = 0;

  // The workspace of that id as this data plane runs it, or nullopt when it has none.
  virtual Result<std::optional<api::Workspace>> FindWorkspace(const std::string& id) = 0;
  // Creates the workspace, its user added to this data plane with the control plane's uid;
  // everything is checked before anything is written.
  virtual Status CreateWorkspace(const WorkspaceCreation& w) = 0;
  // Marks it stopping: its partition drains, then everything of it is removed.
  virtual Status StopWorkspace(const std::string& id, bool cancel_jobs) = 0;

  // Runs a command in the controller pod as SlurmUser; its output, or an error naming the
  // command and its stderr when it exits non-zero.
  virtual Result<std::string> InController(const std::vector<std::string>& argv) = 0;
  // Runs a command in the workspace's login pod as its user, with the workspace's shell
  // environment (token, partition), in its dataset directory.
  virtual Result<ProcessResult> InWorkspace(const api::Workspace& w, const std::vector<std::string>& argv,
                                            const std::string& stdin_data) = 0;
  // The running pods of this cluster where a job's files may be, best first: the job's worker
  // `node` (Slurm's node name) while it runs, the login pods of the user's workspaces (they
  // mount the workspaces' datasets), the cluster's login pod.
  virtual Result<std::vector<std::string>> PodsForJobFiles(const std::string& node, const std::string& user) = 0;
  // An interactive shell as the workspace's user in its login pod (its shell environment and
  // dataset directory, as `hpcplane workspace exec`), on a new pseudo-terminal of cols x rows.
  // The caller owns the terminal and the process.
  virtual Result<PtyProcess> StartShell(const api::Workspace& w, int cols, int rows) = 0;
  // JupyterLab (`jupyter-lab` of the login pod's environment) as the workspace's user in its
  // login pod, in its dataset directory, listening on the pod's address. FailedPrecondition when
  // the environment has no JupyterLab. The caller owns the process.
  virtual Result<LabProcess> StartLab(const api::Workspace& w, const LabLaunch& launch) = 0;
  // Runs a command as `user` in `pod`, one of this cluster's pods.
  virtual Result<ProcessResult> AsUserInPod(const std::string& pod, const std::string& user,
                                            const std::vector<std::string>& argv) = 0;
};

}  // namespace hpc::cp
