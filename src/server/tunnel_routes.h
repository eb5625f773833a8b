// Browser WebSockets served through a tunnel to a data plane (tunnel_hub.h): the agent's end of
// every tunnel (GET /api/v1/dataplanes/{dp}/tunnels/{id}, an upgrade from that data plane's own
// agent), and the browser's end for the routes that offer one (a terminal, JupyterLab's sockets).
#pragma once

#include <httplib.h>

#include <chrono>
#include <cstdint>
#include <functional>

#include <nlohmann/json.hpp>

#include "common/websocket.h"

namespace hpc::cp {
class RouteTable;
class RelayHub;
class TunnelHub;
namespace http {
class Auth;
}

struct BrowserTunnel {
  std::string data_plane;
  nlohmann::json request;                 // relayed to the agent with the tunnel's id added (WithTunnel)
  std::chrono::seconds open_timeout{20};  // for the agent to open its end
  int64_t credential_expires_at = 0;      // the browser's end closes then (4401); 0: never
  std::function<void()> on_open;          // once both ends are open
  std::function<void(const ws::CloseInfo&)> on_close;
};

// For a route's upgrade request, already authorised: asks the agent through the relay to open
// its end, then serves the browser's end joined to it until either closes. When the agent could
// not, answers its error as HTTP (no WebSocket is opened).
void ServeBrowserTunnel(RelayHub* relay, TunnelHub* tunnels, BrowserTunnel t, const httplib::Request& req,
                        httplib::Response& res);

// The agent's end.
void AddTunnelRoutes(RouteTable& s, http::Auth* authn, TunnelHub* tunnels);

}  // namespace hpc::cp
