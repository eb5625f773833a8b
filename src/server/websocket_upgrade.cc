#include "server/websocket_upgrade.h"

#include <sys/socket.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "server/connection_guard.h"
#include "server/http_api.h"

namespace hpc::cp {

namespace {
std::vector<std::pair<std::string, std::string>> HeadersOf(const httplib::Request& req) {
  return {req.headers.begin(), req.headers.end()};
}

// "https://host:port" -> "host:port".
std::string HostOfOrigin(const std::string& origin) {
  const size_t scheme = origin.find("://");
  return scheme == std::string::npos ? origin : origin.substr(scheme + 3);
}
}  // namespace

bool CheckUpgrade(const httplib::Request& req, httplib::Response& res) {
  if (!ws::IsUpgrade(HeadersOf(req))) {
    http::Error(res, 400, "this path is a WebSocket: send Upgrade: websocket and Connection: Upgrade");
    return false;
  }
  const std::string origin = req.get_header_value("Origin");
  if (!origin.empty() && HostOfOrigin(origin) != req.get_header_value("Host")) {
    http::Error(res, 403, fmt::format("a WebSocket from origin {} is not this site's", origin.substr(0, 200)));
    return false;
  }
  return true;
}

bool ServeWebSocket(const httplib::Request& req, httplib::Response& res, ws::Connection::OnMessage on_message,
                    ws::Connection::OnClosed on_closed,
                    const std::function<void(std::shared_ptr<ws::Connection>)>& opened) {
  const int fd = FindConnection(req.local_port, req.remote_addr, req.remote_port);
  if (fd < 0) {
    http::Error(res, 500, "internal error");
    spdlog::error("{} {}: its connection was not found to serve a WebSocket on", req.method, req.path);
    return false;
  }
  {
    // On a TLS listener, httplib's session (its SSL*, which it frees only after this handler).
    ssl_st* tls = const_cast<ssl_st*>(req.ssl);  // NOLINT(cppcoreguidelines-pro-type-const-cast)
    ws::Loop loop;
    auto connection = loop.Accept(fd, tls, {req.target, HeadersOf(req)}, std::move(on_message), std::move(on_closed));
    if (!connection.ok()) {
      http::Error(res, 400, connection.status().message());
      return false;
    }
    opened(*connection);
    loop.Run();
  }  // the Loop's end: what it sent through the TLS session went out
  // The WebSocket is over: httplib's answer and its wait for a next request end here.
  ::shutdown(fd, SHUT_RDWR);
  res.status = 101;
  res.set_header("Connection", "close");
  return true;
}

}  // namespace hpc::cp
