// The control plane's REST API (`hpcplane server`): JSON under /api/v1, the OpenAPI document
// at /api/v1/openapi.json. Every path needs a bearer token; users see only projects they
// belong to, agents act only for their own data plane, admins manage tokens and flags.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/result.h"
#include "server/connection_guard.h"
#include "server/http_api.h"
#include "server/relay_hub.h"
#include "server/route_table.h"
#include "server/server_metrics.h"
#include "server/store.h"
#include "server/terminal_hub.h"
#include "server/tunnel_hub.h"

namespace hpc::cp {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;                     // 0: any free port (see Server::port())
  int unreachable_after_seconds = 15;  // a data plane whose reports stop for this long
  size_t max_body_bytes = 4 << 20;     // larger request bodies are refused with 413 unread
  size_t max_headers = 100;            // more header fields: 431
  int max_failed_signins = 10;         // per client address and minute; then 429
  ConnectionLimits connections;
  // TLS: both files, PEM. Without them the server speaks plain HTTP, which it does only on a
  // loopback address unless allow_plain_http says otherwise (tokens would cross the network in
  // clear text).
  std::string tls_cert, tls_key;
  bool allow_plain_http = false;
};

// "HOST:PORT" with a port 0-65535 (0: any free port); anything else is an error naming it.
Result<ServerOptions> ParseListenAddress(const std::string& host_port);

class RouteTable;
namespace http {
class Auth;
}
class ServerMetrics;

// Every /api/v1 route but the OpenAPI document itself, and the console's files: what
// Server::Routes registers beside /metrics. Apart so a test can list what the API serves.
// `tls`: the server terminates TLS (its session cookies are Secure).
void AddApiRoutes(RouteTable& s, http::Auth* authn, ServerMetrics* metrics, RelayHub* relay, TerminalHub* terminals,
                  TunnelHub* tunnels, int unreachable_after_seconds, bool tls);

class Server {
 public:
  Server(Store* store, ServerOptions opts);
  ~Server();
  // Binds; returns the port.
  Result<int> Bind();
  // Serves until Stop(); call after Bind().
  void Serve();
  void Stop();

 private:
  void Routes();
  void ServerLimits();  // timeouts, limits, error answers
  Store* store_;
  ServerOptions opts_;
  std::unique_ptr<httplib::Server> http_;
  http::SignInLimiter limiter_;
  SessionTable sessions_;  // the web console's
  std::unique_ptr<http::Auth> auth_;
  std::unique_ptr<RouteTable> routes_;
  ConnectionWatchdog watchdog_;
  std::unique_ptr<ServerMetrics> metrics_;
  RelayHub relay_;         // requests for the agents, which call in for them
  TerminalHub terminals_;  // browser terminals' queues
  TunnelHub tunnels_;      // browsers' WebSockets joined to agents' (terminals, JupyterLab)
  Status init_;            // TLS files that could not be loaded
};

// Creates the first admin token if the store has none for `subject`; returns it, or "" when
// one existed. The caller writes it to a 0600 file.
Result<std::string> BootstrapToken(Store* store, const std::string& subject, Role role,
                                   const std::vector<std::string>& projects = {});

}  // namespace hpc::cp
