// WebSockets (RFC 6455) over TCP or TLS (tls_relay.h), on Boost.Beast, without Boost in this header: what a
// terminal or JupyterLab in the browser rides on, from the browser to the control plane and from
// the data plane's agent to it (the agent dials out; the control plane never dials a data plane).
//
// A Loop serves any number of connections on the thread that calls Run, until every one has
// closed. Connections are accepted on a TCP connection an HTTP server already read the upgrade
// request from (Accept) or dialled (Connect). Send and Close may be called from any thread;
// callbacks run on the Loop's thread. Dead peers are found by pings: a connection that hears
// nothing for `idle_timeout` closes.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"

struct ssl_st;  // OpenSSL's SSL, kept out of this header

namespace hpc::ws {

// Close codes this project sends (RFC 6455 section 7.4; 4000-4999 are the application's).
inline constexpr int kNormalClosure = 1000;
inline constexpr int kGoingAway = 1001;
inline constexpr int kTooBig = 1009;
inline constexpr int kServerError = 1011;
inline constexpr int kTokenExpired = 4401;

// `code` when a close frame may carry it; otherwise (1005, 1006, 1015: never sent; or not a
// code at all) 1011. For passing on how one connection ended to another.
int SendableCloseCode(int code);

struct Options {
  std::chrono::seconds idle_timeout{30};  // a ping at half of it; closed when nothing came back
  size_t max_message_bytes = 16u << 20;   // a larger incoming message closes the connection (1009)
  size_t max_queued_bytes = 64u << 20;    // unsent output beyond this closes it (a reader too slow)
};

// How a connection ended: the close code and reason the peer sent or this side sent, or 1006
// with what failed when the connection broke without a close handshake.
struct CloseInfo {
  int code = 1006;
  std::string reason;
};

namespace detail {
struct LoopLink;  // the Loop's io_context while the Loop lives
}

class Connection {
 public:
  using OnMessage = std::function<void(std::string data, bool binary)>;
  using OnClosed = std::function<void(const CloseInfo&)>;
  struct Impl;

  // The handle refers to the connection weakly: the Loop's pending operations own it, so it lives
  // exactly as long as it is served; once it ended (or its Loop is gone), Send and Close do
  // nothing.
  Connection(std::weak_ptr<Impl> impl, std::shared_ptr<detail::LoopLink> loop)
      : impl_(std::move(impl)), loop_(std::move(loop)) {}
  // Queues a message; nothing once the connection is closing.
  void Send(std::string data, bool binary);
  // Starts the close handshake after what is queued went out. `reason` is cut to 123 bytes.
  void Close(int code, std::string reason);
  // Closes with `code` and `reason` at `when` unless it ended before.
  void CloseAt(std::chrono::system_clock::time_point when, int code, std::string reason);

 private:
  std::weak_ptr<Impl> impl_;
  std::shared_ptr<detail::LoopLink> loop_;
};

// The parts of an HTTP upgrade request a handshake needs.
struct UpgradeRequest {
  std::string target;                                        // path and query
  std::vector<std::pair<std::string, std::string>> headers;  // as received
};

// Where a WebSocket is dialled: ws://host:port, or with `tls` wss://host:port, the server's
// certificate verified against `ca_file` (the system's CAs when empty) and `host`.
struct Endpoint {
  std::string host, port;
  bool tls = false;
  std::string ca_file;
};
// The endpoint of a server's http:// or https:// URL (its path dropped). InvalidArgument for any
// other scheme.
Result<Endpoint> EndpointOf(const std::string& url, const std::string& ca_file = "");

// Is this header set a WebSocket upgrade (Upgrade: websocket, Connection: upgrade)?
bool IsUpgrade(const std::vector<std::pair<std::string, std::string>>& headers);

class Loop {
 public:
  explicit Loop(Options options = {});
  ~Loop();
  Loop(const Loop&) = delete;
  Loop& operator=(const Loop&) = delete;

  // Answers the upgrade `request` read from TCP connection `fd` and serves the connection. The
  // Loop works on a duplicate of fd; the caller's fd stays the caller's. Callbacks are set before
  // the first message can arrive. An error (and nothing answered) when the request is not a
  // valid WebSocket handshake.
  Result<std::shared_ptr<Connection>> Accept(int fd, const UpgradeRequest& request, Connection::OnMessage on_message,
                                             Connection::OnClosed on_closed) {
    return Accept(fd, nullptr, request, std::move(on_message), std::move(on_closed));
  }
  // The same on a connection whose TLS session `tls` (OpenSSL's SSL*) an HTTP server made and
  // read the request through (nullptr: plain TCP). Session and fd stay the caller's and must
  // outlive the Loop, whose destruction waits for what it sent to go out (tls_relay.h).
  Result<std::shared_ptr<Connection>> Accept(int fd, ssl_st* tls, const UpgradeRequest& request,
                                             Connection::OnMessage on_message, Connection::OnClosed on_closed);
  // Dials `to` (ws:// or wss://) for `target` with `headers` added, within `timeout`.
  Result<std::shared_ptr<Connection>> Connect(const Endpoint& to, const std::string& target,
                                              const std::map<std::string, std::string>& headers,
                                              std::chrono::milliseconds timeout, Connection::OnMessage on_message,
                                              Connection::OnClosed on_closed);
  // Dials ws://host:port/target.
  Result<std::shared_ptr<Connection>> Connect(const std::string& host, const std::string& port,
                                              const std::string& target,
                                              const std::map<std::string, std::string>& headers,
                                              std::chrono::milliseconds timeout, Connection::OnMessage on_message,
                                              Connection::OnClosed on_closed) {
    Endpoint to;
    to.host = host;
    to.port = port;
    return Connect(to, target, headers, timeout, std::move(on_message), std::move(on_closed));
  }
  // Serves until every connection closed (or Stop).
  void Run();
  // From any thread: closes every connection (1001) and ends Run.
  void Stop();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace hpc::ws
