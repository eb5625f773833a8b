// The agent's side of JupyterLab in a workspace (the server's side: server/lab_routes.h; what
// passes between them: messages/relay_messages.h). On the first request for a workspace it
// starts JupyterLab there (DataPlaneAccess::StartLab) with a token of its own that never leaves
// the data plane, and waits until it answers. Relayed HTTP requests ("lab-http") are
// sent to it with that token and answered whole; a relayed socket ("lab-socket") is a WebSocket
// to JupyterLab joined to one the agent opens back to the control plane's tunnel, both served on
// a thread of the socket's own. JupyterLab runs until its workspace's login pod goes, or the
// agent stops.
#pragma once

#include <atomic>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "agent/agent_terminal.h"
#include "agent/data_plane_access.h"
#include "common/websocket.h"
#include "messages/relay_messages.h"

namespace hpc::cp {

class AgentLabs {
 public:
  // The port JupyterLab listens on in the login pod.
  static constexpr int kLabPort = 18888;
  static_assert(kLabPort >= api::kToolPortFirst && kLabPort <= api::kToolPortLast, "a tool's port (api/types.h)");
  // An answer body larger than this is refused: the relay carries it base64 in one request.
  static constexpr size_t kMaxAnswerBytes = 2900u << 10;

  AgentLabs(DataPlaneAccess* dp, TerminalEndpoint endpoint);
  ~AgentLabs();
  // "lab-http": JupyterLab's answer (a LabHttpAnswer) or {"error": ...}.
  nlohmann::json Request(const LabHttp& request);
  // "lab-socket": {"opened": true} once both WebSockets are open, or {"error": ...}.
  nlohmann::json Socket(const LabSocket& request);
  // Closes every socket and ends every JupyterLab.
  void StopAll();
  size_t Running();

 private:
  struct Lab;
  struct SocketRun;
  struct Relayed {
    std::string workspace, project, user, target;
  };
  // `r`'s workspace when it is the user's and Ready here, and its target under the base.
  Result<Relayed> Check(Relayed r, api::Workspace* w);
  // The workspace's running JupyterLab, started (and waited for) when there is none.
  Result<std::shared_ptr<Lab>> Ensure(const api::Workspace& w, const Relayed& r);
  void ReapSockets();  // joins the threads of sockets that closed

  DataPlaneAccess* dp_;
  TerminalEndpoint endpoint_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<Lab>> labs_;  // by workspace
  std::list<std::unique_ptr<SocketRun>> sockets_;
  std::atomic<bool> stopping_{false};
};

}  // namespace hpc::cp
