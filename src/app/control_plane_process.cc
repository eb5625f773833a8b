#include "app/control_plane_process.h"

#include <fmt/format.h>

#include "app/kubernetes_data_plane.h"
#include "app/local_data_plane.h"
#include "common/files.h"
#include "common/log.h"
#include "common/stop_signal.h"

namespace hpc::app {

std::string StoreUrlOf(const std::string& state_dir, const std::string& store_url) {
  return store_url.empty() ? "sqlite:" + state_dir + "/controlplane/hpcplane.db" : store_url;
}

Result<std::unique_ptr<ControlPlaneProcess>> ControlPlaneProcess::Start(const Config& config) {
  std::unique_ptr<ControlPlaneProcess> p(new ControlPlaneProcess());
  const std::string dir = config.state_dir + "/controlplane";
  RETURN_IF_ERROR(files::MakeDirs(dir, 0700));
  p->store_url_ = StoreUrlOf(config.state_dir, config.store_url);
  ASSIGN_OR_RETURN(p->store_, cp::OpenStore(p->store_url_));
  p->options_ = config.server;
  p->server_ = std::make_unique<cp::Server>(p->store_.get(), p->options_);
  ASSIGN_OR_RETURN(p->port_, p->server_->Bind());
  // Written once the port is bound: whoever waits for the token file can connect at once.
  p->admin_token_file_ = dir + "/admin.token";
  p->wrote_admin_token_ = !files::Exists(p->admin_token_file_);
  RETURN_IF_ERROR(p->WriteTokenIfMissing(p->admin_token_file_, "admin", cp::Role::kAdmin));
  cp::Server* server = p->server_.get();
  p->serving_ = true;
  p->server_thread_ = std::thread([server, serving = &p->serving_] {
    server->Serve();
    *serving = false;
  });
  return p;
}

ControlPlaneProcess::~ControlPlaneProcess() { Stop(); }

std::string ControlPlaneProcess::LocalUrl() const {
  const std::string host = options_.host == "0.0.0.0" ? "127.0.0.1" : options_.host;
  return fmt::format("{}://{}:{}", options_.tls_cert.empty() ? "http" : "https", host, port_);
}

Status ControlPlaneProcess::WriteTokenIfMissing(const std::string& file, const std::string& subject, cp::Role role) {
  if (files::Exists(file)) return Status::Ok();
  ASSIGN_OR_RETURN(std::string token, cp::BootstrapToken(store_.get(), subject, role));
  return files::WriteAtomic(file, token + "\n", 0600);
}

void ControlPlaneProcess::StartAgent(const op::ClusterPaths& p, const std::string& self_exe, cp::AgentOptions options) {
  agent_thread_ = std::thread([p, self_exe, options] { RunAgent(p, self_exe, options); });
}

void ControlPlaneProcess::Stop() {
  if (server_) server_->Stop();
  if (server_thread_.joinable()) server_thread_.join();
  // The agent watches the process's stop signal: it ends once that is set.
  if (agent_thread_.joinable()) {
    StopFlag() = true;
    agent_thread_.join();
  }
}

void RunAgent(const op::ClusterPaths& p, const std::string& self_exe, cp::AgentOptions options) {
  LocalDataPlane data_plane(p, self_exe);
  options.cursor_file = data_plane.AgentCursorFile();
  cp::Agent agent(&data_plane, options);
  agent.Run(StopFlag());
}

Status RunKubernetesAgent(KubernetesDataPlaneOptions data_plane_options, cp::AgentOptions options) {
  log::UseServiceFormat();  // a service's log (timestamps, info), as the operator's beside it
  ASSIGN_OR_RETURN(auto data_plane, KubernetesDataPlane::Open(std::move(data_plane_options)));
  options.cursor_file = data_plane->AgentCursorFile();
  if (options.data_plane.empty()) options.data_plane = data_plane->ClusterName();
  cp::Agent agent(data_plane.get(), options);
  agent.Run(StopFlag());
  return Status::Ok();
}

}  // namespace hpc::app
