#include "server/server.h"

#include <httplib.h>

#include <array>
#include <regex>

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "common/elastic_thread_pool.h"
#include "common/jwt.h"
#include "server/admin_routes.h"
#include "server/cancel_routes.h"
#include "server/console_routes.h"
#include "server/dataplane_routes.h"
#include "server/http_api.h"
#include "server/job_output_routes.h"
#include "server/job_routes.h"
#include "server/lab_routes.h"
#include "server/live_cluster_routes.h"
#include "server/openapi.h"
#include "server/relay_routes.h"
#include "server/template_routes.h"
#include "server/terminal_routes.h"
#include "server/tunnel_routes.h"
#include "server/workspace_routes.h"

namespace hpc::cp {
using http::Body;
using http::Error;
using http::kMaxUnixSeconds;
using http::Ok;
using nlohmann::json;

Server::Server(Store* store, ServerOptions opts)
    : store_(store),
      opts_(std::move(opts)),
      limiter_(opts_.max_failed_signins),
      watchdog_(opts_.connections),
      // A socket holds a server thread at each end (the browser's, the agent's) for its life:
      // half of the threads at most (128 sockets of the default 512), so the API keeps the rest.
      tunnels_(std::max<size_t>(1, opts_.connections.max_threads / 4)) {
  if (opts_.tls_cert.empty() != opts_.tls_key.empty()) {
    init_ = Status::Error("TLS needs both --tls-cert and --tls-key");
  } else if (!opts_.tls_cert.empty()) {
    auto tls = std::make_unique<httplib::SSLServer>(opts_.tls_cert.c_str(), opts_.tls_key.c_str());
    if (!tls->is_valid()) {
      init_ =
          Status::Errorf("TLS: cannot load certificate {} with key {} (PEM files, the key matching the certificate)",
                         opts_.tls_cert, opts_.tls_key);
    }
    http_ = std::move(tls);
  }
  if (!http_) http_ = std::make_unique<httplib::Server>();
  auth_ = std::make_unique<http::Auth>(store_, &limiter_, &sessions_);
  // A request whose handler runs has been read whole: from then on it is being served (an export
  // may stream for long) and the watchdog's deadline no longer applies to it.
  routes_ = std::make_unique<RouteTable>(
      *http_, [w = &watchdog_](const httplib::Request& req) { w->RequestStarted(req.remote_addr, req.remote_port); });
  metrics_ = std::make_unique<ServerMetrics>(store_, opts_.unreachable_after_seconds, &watchdog_);
  store_->ObserveOperations([m = metrics_.get()](double seconds, bool ok) { m->StoreOperation(seconds, ok); });
  Routes();
}

Server::~Server() = default;

Result<ServerOptions> ParseListenAddress(const std::string& host_port) {
  auto colon = host_port.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return Status::Errorf("listen address: expected HOST:PORT (got \"{}\")", host_port);
  }
  auto port = http::ParseInteger(host_port.substr(colon + 1), 0, 65535);
  if (!port) return Status::Errorf("listen address: port must be 0-65535 (got \"{}\")", host_port.substr(colon + 1));
  ServerOptions o;
  o.host = host_port.substr(0, colon);
  o.port = static_cast<int>(*port);
  return o;
}

namespace {
// When the request this connection thread serves had its headers read.
std::chrono::steady_clock::time_point& RequestStart() {
  thread_local std::chrono::steady_clock::time_point start;
  return start;
}

bool IsLoopbackHost(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}
}  // namespace

Result<int> Server::Bind() {
  RETURN_IF_ERROR(init_);
  if (opts_.tls_cert.empty() && !opts_.allow_plain_http && !IsLoopbackHost(opts_.host)) {
    return Status::Errorf(
        "refusing plain HTTP on {}: API tokens would cross the network in clear text; give --tls-cert and "
        "--tls-key, or --allow-plain-http behind a TLS-terminating proxy",
        opts_.host);
  }
  int port = opts_.port == 0 ? http_->bind_to_any_port(opts_.host)
                             : (http_->bind_to_port(opts_.host, opts_.port) ? opts_.port : -1);
  if (port < 0) return Status::Errorf("cannot listen on {}:{}", opts_.host, opts_.port);
  if (WidenListenBacklog(port, 1024) == 0) spdlog::warn("listen backlog of port {} left at the HTTP library's 5", port);
  watchdog_.Start(port, opts_.tls_cert.empty());
  return port;
}

void Server::Serve() { http_->listen_after_bind(); }
void Server::Stop() {
  relay_.Shutdown();  // agents' and browsers' long polls return
  terminals_.Shutdown();
  tunnels_.Shutdown();  // open WebSockets close, their handlers return
  http_->stop();
  watchdog_.Stop();
}

Result<std::string> BootstrapToken(Store* store, const std::string& subject, Role role,
                                   const std::vector<std::string>& projects) {
  ASSIGN_OR_RETURN(std::string token, jwt::NewApiToken());
  RETURN_IF_ERROR(store->PutToken(jwt::Sha256Hex(token), {subject, role, projects}));
  return token;
}

void Server::Routes() {
  auto& s = *routes_;
  http::Auth* authn = auth_.get();
  ServerMetrics* metrics = metrics_.get();
  const int unreachable_after = opts_.unreachable_after_seconds;

  auto auth = [authn](const httplib::Request& req, httplib::Response& res) { return authn->Authenticate(req, res); };

  // Prometheus' scrape: admins, or a token of role metrics (which reads nothing else).
  auto scrape_lock = std::make_shared<std::mutex>();
  s.Get("/metrics", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    if (p->role != Role::kAdmin && p->role != Role::kMetrics) return Error(res, 403, "metrics or admin role required");
    std::lock_guard<std::mutex> l(*scrape_lock);
    res.set_content(metrics->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });

  // Written once every route is in the table it is completed from.
  auto openapi = std::make_shared<std::string>();
  s.Get("/api/v1/openapi.json", [=](const httplib::Request& req, httplib::Response& res) {
    if (!auth(req, res)) return;
    res.set_content(*openapi, http::kJsonContentType);
  });

  AddApiRoutes(s, authn, metrics, &relay_, &terminals_, &tunnels_, unreachable_after, !opts_.tls_cert.empty());
  *openapi = OpenApiDocument(s).dump();
  ServerLimits();
}

void AddApiRoutes(RouteTable& s, http::Auth* authn, ServerMetrics* metrics, RelayHub* relay, TerminalHub* terminals,
                  TunnelHub* tunnels, int unreachable_after, bool tls) {
  AddDataPlaneRoutes(s, authn, metrics, unreachable_after);
  AddLiveClusterRoutes(s, authn, unreachable_after);
  AddJobRoutes(s, authn, unreachable_after);
  AddRelayRoutes(s, authn, relay);
  AddJobOutputRoutes(s, authn, relay, unreachable_after);
  AddTerminalRoutes(s, authn, relay, terminals, tunnels, unreachable_after);
  AddAdminRoutes(s, authn);
  AddWorkspaceRoutes(s, authn, unreachable_after);
  AddConsoleRoutes(s, authn, tls);
  AddTunnelRoutes(s, authn, tunnels);
  AddLabRoutes(s, authn, relay, tunnels, unreachable_after);
  AddCancelRoutes(s, authn, unreachable_after);
  AddTemplateRoutes(s, authn);
}

namespace {

// A request no route answers: 405 with the methods its path has (Allow), or 404 when no route
// has the path.
void NotServed(const RouteTable& routes, const httplib::Request& req, httplib::Response& res) {
  std::string allow = routes.Allow(req.path);
  if (allow.empty()) return Error(res, 404, "no such path: " + req.path);
  res.set_header("Allow", allow);
  Error(res, 405, fmt::format("{} is not served for {}; it takes {}", req.method.substr(0, 16), req.path, allow));
}

}  // namespace

void Server::ServerLimits() {
  httplib::Server& s = *http_;
  const RouteTable* routes = routes_.get();
  ConnectionWatchdog* watchdog = &watchdog_;
  // Limits, so that no client can make the server read without bound.
  s.set_payload_max_length(opts_.max_body_bytes);
  // A connection waits for its next request briefly; slow senders are the watchdog's.
  s.set_keep_alive_timeout(2);
  // Headers and body go out as separate writes: without NODELAY, Nagle and the client's delayed
  // ACK add 40 ms to a request.
  s.set_tcp_nodelay(true);
  s.set_keep_alive_max_count(100);
  s.set_read_timeout(5, 0);
  s.set_write_timeout(5, 0);
  const size_t max_threads = opts_.connections.max_threads;
  s.new_task_queue = [max_threads] { return new ElasticThreadPool(max_threads); };
  const size_t max_headers = opts_.max_headers;
  s.set_pre_routing_handler([max_headers, routes](const httplib::Request& req, httplib::Response& res) {
    RequestStart() = std::chrono::steady_clock::now();
    if (req.headers.size() > max_headers) {
      Error(res, 431, fmt::format("too many header fields ({}; limit {})", req.headers.size(), max_headers));
      return httplib::Server::HandlerResponse::Handled;
    }
    // A method no route has (TRACE, CONNECT, OPTIONS, ...): cpp-httplib would answer TRACE and
    // CONNECT a bare 400.
    static constexpr std::array<const char*, 6> kRouted = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"};
    if (std::find(kRouted.begin(), kRouted.end(), req.method) == kRouted.end()) {
      NotServed(*routes, req, res);
      return httplib::Server::HandlerResponse::Handled;
    }
    // A request without Content-Length or Transfer-Encoding has no body (RFC 9112, 6.3), but
    // cpp-httplib 0.11 reads a POST, PUT, PATCH or DELETE's body until the connection closes:
    // the client waiting for its answer would wait for the read timeout. Pre-routing runs before
    // the body is read, on the request object itself (const only in the handler's signature).
    const bool reads_body =
        req.method == "POST" || req.method == "PUT" || req.method == "PATCH" || req.method == "DELETE";
    if (reads_body && !req.has_header("Content-Length") && !req.has_header("Transfer-Encoding")) {
      const_cast<httplib::Request&>(req).set_header("Content-Length", "0");
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  ServerMetrics* metrics = metrics_.get();
  s.set_logger([watchdog, metrics](const httplib::Request& req, const httplib::Response& res) {
    watchdog->ResponseSent(req.remote_addr, req.remote_port);
    // The start its headers were read at, on this same connection thread (zero if they never were).
    auto& start = RequestStart();
    double seconds = start == std::chrono::steady_clock::time_point{}
                         ? 0
                         : std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    start = {};
    metrics->Request(req.method, RouteTable::TakeTemplate(), res.status, seconds);
  });
  // Errors the HTTP layer answers itself (bad request line, body or URL too long, no route)
  // get the same JSON body as every other error.
  const size_t max_body = opts_.max_body_bytes;
  s.set_error_handler([max_body, routes](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    switch (res.status) {
      case 404:
        return NotServed(*routes, req, res);
      case 413:
        return Error(res, 413, fmt::format("request body too large (limit {} bytes)", max_body), "body");
      case 414:
        return Error(res, 414, "request URL too long");
      case 431:
        return Error(res, 431, "request headers too large");
      default:
        return Error(res, res.status, res.status >= 500 ? "internal error" : "bad request");
    }
  });
  // A handler that throws answers instead of taking the process down. JSON type errors come
  // from what the client sent (a field of the wrong type): a 400. Anything else is logged here
  // and answered without internals.
  s.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
    try {
      std::rethrow_exception(ep);
    } catch (const json::exception& e) {
      Error(res, 400, fmt::format("request body: a field has the wrong type or form ({})", e.what()), "body");
    } catch (const std::exception& e) {
      spdlog::error("{} {}: {}", req.method, req.path, e.what());
      Error(res, 500, "internal error");
    } catch (...) {
      spdlog::error("{} {}: unknown exception", req.method, req.path);
      Error(res, 500, "internal error");
    }
  });
}

}  // namespace hpc::cp
