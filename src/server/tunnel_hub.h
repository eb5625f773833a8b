// Tunnels: a WebSocket from a browser joined to one that a data plane's agent opens back to the
// control plane for it (the control plane never dials a data plane). The server creates a tunnel,
// asks the agent through the relay to open its end (/api/v1/dataplanes/{dp}/tunnels/{id}) and to
// connect it to what the browser wants on the data plane (JupyterLab's sockets), then joins the
// browser's end. Messages pass through unchanged, text or binary; what one end sends before the
// other joined waits (bounded); when one end closes, the other is closed with its code and reason.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/websocket.h"

namespace hpc::cp {

class TunnelHub {
 public:
  enum class End { kBrowser, kAgent };

  explicit TunnelHub(size_t max_tunnels = 512, size_t max_waiting_bytes = 4u << 20)
      : max_tunnels_(max_tunnels), max_waiting_bytes_(max_waiting_bytes) {}

  // A new tunnel to `data_plane`: its id (16 random bytes, hex) for the agent. Unavailable when
  // max_tunnels are open or on Shutdown.
  Result<std::string> Create(const std::string& data_plane);
  // Whether tunnel `id` waits for that end (for the agent's end: from `data_plane`).
  bool Waits(const std::string& id, End end, const std::string& data_plane);
  // Joins an end's connection and sends it what waited for it. NotFound when no tunnel of that id
  // waits for that end (gone, joined already, or — for the agent's end — another data plane's).
  Status Join(const std::string& id, End end, const std::string& data_plane, std::shared_ptr<ws::Connection> c);
  // Waits up to `timeout` for the agent's end to join; false when it did not (or the tunnel ended).
  bool WaitForAgent(const std::string& id, std::chrono::milliseconds timeout);
  // A message from one end: sent to the other, or kept until it joins (beyond max_waiting_bytes
  // the tunnel closes).
  void Forward(const std::string& id, End from, std::string data, bool binary);
  // One end closed, never came, or was refused: both ends are closed with that code and reason
  // (a code that cannot be sent, such as 1006, as 1011) and the tunnel is forgotten.
  void Closed(const std::string& id, const ws::CloseInfo& info);
  // Closes every tunnel (1001); later Creates fail.
  void Shutdown();
  size_t Open();

 private:
  struct Tunnel {
    std::string data_plane;
    std::shared_ptr<ws::Connection> ends[2];
    bool joined[2] = {false, false};
    std::vector<std::pair<std::string, bool>> waiting[2];  // for the end not joined yet
    size_t waiting_bytes = 0;
  };
  const size_t max_tunnels_, max_waiting_bytes_;
  std::mutex mu_;
  std::condition_variable joined_;
  std::map<std::string, std::shared_ptr<Tunnel>> tunnels_;
  bool stopped_ = false;
};

}  // namespace hpc::cp
