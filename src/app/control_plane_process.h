// The control plane in a process: its store (with the first admin token written under the state
// dir), its API server bound and serving on a thread, and, when asked, a data plane's agent on
// another thread. One object for `hpcplane server` and for the daemon of `up --control-plane`
// (and RunAgent for `hpcplane agent`), so every way of running the control plane opens, serves
// and stops it the same way. Everything stops on Stop() or when the object goes.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "agent/agent.h"
#include "app/kubernetes_data_plane_options.h"
#include "common/result.h"
#include "operator/cluster_paths.h"
#include "server/server.h"
#include "server/store.h"

namespace hpc::app {

// The store `hpcplane server` opens: `store_url`, else SQLite under <state_dir>/controlplane.
std::string StoreUrlOf(const std::string& state_dir, const std::string& store_url);

class ControlPlaneProcess {
 public:
  struct Config {
    std::string state_dir;  // the admin token goes to <state_dir>/controlplane/admin.token (0600)
    std::string store_url;  // empty: SQLite under <state_dir>/controlplane
    cp::ServerOptions server;
  };
  // Opens the store, writes the admin token when there is none, binds and starts serving. A
  // failure (store, TLS files, address in use) leaves no thread behind.
  static Result<std::unique_ptr<ControlPlaneProcess>> Start(const Config& config);
  ~ControlPlaneProcess();
  ControlPlaneProcess(const ControlPlaneProcess&) = delete;
  ControlPlaneProcess& operator=(const ControlPlaneProcess&) = delete;

  int port() const { return port_; }
  const std::string& store_url() const { return store_url_; }
  const std::string& admin_token_file() const { return admin_token_file_; }
  bool wrote_admin_token() const { return wrote_admin_token_; }
  // False once the server stopped serving (Stop(), or it failed).
  bool serving() const { return serving_; }
  // The URL an agent on this host reaches the server at.
  std::string LocalUrl() const;

  // Writes a token for `subject` to `file` (0600) when the file does not exist yet.
  Status WriteTokenIfMissing(const std::string& file, const std::string& subject, cp::Role role);
  // Runs cluster `p`'s agent beside the server until Stop() or the process's stop signal.
  void StartAgent(const op::ClusterPaths& p, const std::string& self_exe, cp::AgentOptions options);
  // Stops the server and the agent and waits for their threads. Calling it again does nothing.
  void Stop();

 private:
  ControlPlaneProcess() = default;
  std::unique_ptr<cp::Store> store_;
  std::unique_ptr<cp::Server> server_;
  std::thread server_thread_, agent_thread_;
  cp::ServerOptions options_;
  std::string store_url_, admin_token_file_;
  bool wrote_admin_token_ = false;
  std::atomic<bool> serving_{false};
  int port_ = 0;
};

// Runs cluster `p`'s agent on this thread until the process's stop signal (`hpcplane agent`).
void RunAgent(const op::ClusterPaths& p, const std::string& self_exe, cp::AgentOptions options);
// Runs the agent of a SlurmCluster on Kubernetes on this thread until the process's stop signal
// (`hpcplane agent --kubernetes-namespace NS --slurm-cluster NAME`); an error when it cannot
// start (no kubeconfig, no service account).
Status RunKubernetesAgent(KubernetesDataPlaneOptions data_plane, cp::AgentOptions options);

}  // namespace hpc::app
