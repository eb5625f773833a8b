#include "common/websocket.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/system_timer.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>
#include <cctype>
#include <deque>
#include <mutex>

#include <fmt/format.h>

#include "common/tcp_dial.h"
#include "common/tls_relay.h"

namespace hpc::ws {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;

// What connections' handles reach of their Loop: its io_context while the Loop lives. A handle
// may outlive the Loop (a tunnel's other end holds it).
struct detail::LoopLink {
  std::mutex mu;
  asio::io_context* ioc = nullptr;
};
using Shared = detail::LoopLink;

namespace {

std::string Lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string HeaderValue(const std::vector<std::pair<std::string, std::string>>& headers, const std::string& name) {
  for (const auto& [k, v] : headers)
    if (Lower(k) == name) return v;
  return "";
}

// A close reason is at most 123 bytes of UTF-8: cut at a character boundary.
std::string CloseReasonText(std::string reason) {
  if (reason.size() <= 123) return reason;
  size_t n = 123;
  while (n > 0 && (static_cast<unsigned char>(reason[n]) & 0xC0) == 0x80) --n;
  reason.resize(n);
  return reason;
}

}  // namespace

struct Connection::Impl : std::enable_shared_from_this<Connection::Impl> {
  Impl(asio::io_context& context, tcp::socket socket, const Options& o)
      : ws(std::move(socket)), options(o), close_timer(context) {
    ws.set_option(websocket::stream_base::timeout{std::chrono::seconds(30), o.idle_timeout, true});
    ws.read_message_max(o.max_message_bytes);
  }

  void Read() {
    ws.async_read(in, [self = shared_from_this()](beast::error_code ec, size_t) {
      if (ec) return self->End(ec);
      std::string data = beast::buffers_to_string(self->in.data());
      self->in.consume(self->in.size());
      if (self->on_message) self->on_message(std::move(data), self->ws.got_binary());
      self->Read();
    });
  }

  void Enqueue(std::string data, bool binary) {
    if (close_pending || ended) return;
    queued += data.size();
    if (queued > options.max_queued_bytes) return RequestClose(kTooBig, "the peer does not read its messages");
    outbox.emplace_back(std::move(data), binary);
    if (!writing) Write();
  }

  void Write() {
    if (ended) return;
    if (outbox.empty()) {
      writing = false;
      if (close_pending) StartClose();
      return;
    }
    writing = true;
    ws.binary(outbox.front().second);
    ws.async_write(asio::buffer(outbox.front().first), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->queued -= self->outbox.front().first.size();
      self->outbox.pop_front();
      if (ec) return self->End(ec);
      self->Write();
    });
  }

  void RequestClose(int code, std::string reason) {
    if (close_pending || ended) return;
    close_pending = true;
    info = {code, CloseReasonText(std::move(reason))};
    if (!writing) StartClose();
  }

  void StartClose() {
    if (closing || ended) return;
    closing = true;
    websocket::close_reason r(static_cast<websocket::close_code>(info.code), info.reason);
    ws.async_close(r, [self = shared_from_this()](beast::error_code ec) {
      // The read loop ends when the peer's close arrives; a failed close ends it now.
      if (ec) self->End(ec);
    });
  }

  void End(const beast::error_code& ec) {
    if (ended) return;
    ended = true;
    close_timer.cancel();
    if (!close_pending) {
      if (ec == websocket::error::closed) {
        info = {ws.reason().code, std::string(ws.reason().reason.c_str())};
      } else {
        info = {1006, ec.message()};
      }
    }
    beast::error_code ignored;
    beast::get_lowest_layer(ws).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws).socket().close(ignored);
    auto closed = std::move(on_closed);
    on_message = nullptr;
    on_closed = nullptr;
    if (closed) closed(info);
  }

  websocket::stream<beast::tcp_stream> ws;
  Options options;
  beast::flat_buffer in;
  std::deque<std::pair<std::string, bool>> outbox;
  size_t queued = 0;
  bool writing = false, close_pending = false, closing = false, ended = false;
  CloseInfo info;
  asio::system_timer close_timer;
  OnMessage on_message;
  OnClosed on_closed;
};

namespace {
// Runs `fn` on the connection's Loop thread, if the Loop and the connection still live.
template <typename Fn>
void OnLoop(const std::weak_ptr<Connection::Impl>& weak, const std::shared_ptr<Shared>& shared, Fn fn) {
  if (!shared) return;  // a handle of no connection
  std::lock_guard<std::mutex> lock(shared->mu);
  if (shared->ioc == nullptr) return;
  asio::post(*shared->ioc, [weak, fn = std::move(fn)]() mutable {
    if (auto impl = weak.lock()) fn(*impl);
  });
}
}  // namespace

struct Loop::State {
  // First, so destroyed last: a relay ends once the io_context's sockets (its plain ends) closed.
  std::vector<std::unique_ptr<TlsRelay>> relays;
  Options options;
  asio::io_context ioc;
  std::shared_ptr<Shared> shared = std::make_shared<Shared>();
  std::mutex mu;
  std::vector<std::weak_ptr<Connection::Impl>> connections;

  std::shared_ptr<Connection> Start(std::shared_ptr<Connection::Impl> impl, Connection::OnMessage on_message,
                                    Connection::OnClosed on_closed) {
    impl->on_message = std::move(on_message);
    impl->on_closed = std::move(on_closed);
    {
      std::lock_guard<std::mutex> lock(mu);
      std::erase_if(connections, [](const auto& w) { return w.expired(); });
      connections.push_back(impl);
    }
    impl->Read();
    return std::make_shared<Connection>(impl, shared);
  }
};

void Connection::Send(std::string data, bool binary) {
  OnLoop(impl_, loop_, [data = std::move(data), binary](Impl& c) mutable { c.Enqueue(std::move(data), binary); });
}

void Connection::Close(int code, std::string reason) {
  OnLoop(impl_, loop_, [code, reason = std::move(reason)](Impl& c) mutable { c.RequestClose(code, reason); });
}

void Connection::CloseAt(std::chrono::system_clock::time_point when, int code, std::string reason) {
  OnLoop(impl_, loop_, [when, code, reason = std::move(reason)](Impl& c) mutable {
    c.close_timer.expires_at(when);
    c.close_timer.async_wait([self = c.shared_from_this(), code, reason](beast::error_code ec) {
      if (!ec) self->RequestClose(code, reason);
    });
  });
}

int SendableCloseCode(int code) {
  const bool defined = code >= 1000 && code <= 1014 && code != 1004 && code != 1005 && code != 1006;
  return defined || (code >= 3000 && code <= 4999) ? code : kServerError;
}

Result<Endpoint> EndpointOf(const std::string& url, const std::string& ca_file) {
  Endpoint e;
  std::string rest;
  std::string default_port;
  if (url.rfind("http://", 0) == 0) {
    rest = url.substr(7);
    default_port = "80";
  } else if (url.rfind("https://", 0) == 0) {
    rest = url.substr(8);
    default_port = "443";
    e.tls = true;
    e.ca_file = ca_file;
  } else {
    return Status::InvalidArgument("", fmt::format("{}: not an http:// or https:// URL", url.substr(0, 200)));
  }
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest[0] == '[') {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("", fmt::format("{}: bad address", url));
    e.host = rest.substr(1, close - 1);
    e.port = rest.size() > close + 2 ? rest.substr(close + 2) : default_port;
    return e;
  }
  const size_t colon = rest.rfind(':');
  e.host = rest.substr(0, colon);
  e.port = colon == std::string::npos ? default_port : rest.substr(colon + 1);
  return e;
}

bool IsUpgrade(const std::vector<std::pair<std::string, std::string>>& headers) {
  return Lower(HeaderValue(headers, "upgrade")) == "websocket" &&
         Lower(HeaderValue(headers, "connection")).find("upgrade") != std::string::npos;
}

Loop::Loop(Options options) : state_(std::make_unique<State>()) {
  state_->options = options;
  state_->shared->ioc = &state_->ioc;
}

Loop::~Loop() {
  {
    std::lock_guard<std::mutex> lock(state_->shared->mu);
    state_->shared->ioc = nullptr;
  }
}

Result<std::shared_ptr<Connection>> Loop::Accept(int fd, ssl_st* tls, const UpgradeRequest& request,
                                                 Connection::OnMessage on_message, Connection::OnClosed on_closed) {
  // Checked here rather than by Beast's accept, which would answer a bad handshake itself.
  if (!IsUpgrade(request.headers)) return Status::InvalidArgument("", "not a WebSocket upgrade request");
  if (HeaderValue(request.headers, "sec-websocket-version") != "13") {
    return Status::InvalidArgument("", "Sec-WebSocket-Version must be 13");
  }
  if (HeaderValue(request.headers, "sec-websocket-key").empty()) {
    return Status::InvalidArgument("", "no Sec-WebSocket-Key header");
  }
  sockaddr_storage local{};
  socklen_t len = sizeof local;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) != 0) return Status::Errorf("getsockname failed");
  int copy = -1;
  if (tls != nullptr) {
    // The Loop serves the relay's plain end (a socket pair) as it would the TCP connection.
    ASSIGN_OR_RETURN(auto relay, TlsRelay::Start(tls, fd, /*owned=*/false));
    copy = relay->TakePlainEnd();
    state_->relays.push_back(std::move(relay));
  } else {
    copy = ::dup(fd);
  }
  if (copy < 0) return Status::Errorf("dup of the connection failed");
  tcp::socket socket(state_->ioc);
  beast::error_code ec;
  socket.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), copy, ec);
  if (ec) {
    ::close(copy);
    return Status::Errorf("taking over the connection: {}", ec.message());
  }
  auto impl = std::make_shared<Connection::Impl>(state_->ioc, std::move(socket), state_->options);
  http::request<http::empty_body> req{http::verb::get, request.target, 11};
  for (const auto& [k, v] : request.headers) req.insert(k, v);
  impl->ws.set_option(websocket::stream_base::decorator(
      [](websocket::response_type& res) { res.set(http::field::server, "hpcplane"); }));
  impl->ws.accept(req, ec);
  if (ec) return Status::Errorf("WebSocket handshake: {}", ec.message());
  return state_->Start(std::move(impl), std::move(on_message), std::move(on_closed));
}

Result<std::shared_ptr<Connection>> Loop::Connect(const Endpoint& to, const std::string& target,
                                                  const std::map<std::string, std::string>& headers,
                                                  std::chrono::milliseconds timeout, Connection::OnMessage on_message,
                                                  Connection::OnClosed on_closed) {
  const std::string url = fmt::format("{}://{}:{}", to.tls ? "wss" : "ws", to.host, to.port);
  tcp::socket socket(state_->ioc);
  if (to.tls) {
    // TLS by a relay (tls_relay.h); the Loop talks plain to its end of a socket pair.
    ASSIGN_OR_RETURN(auto relay, DialTls(to.host, to.port, to.ca_file, timeout));
    const int plain = relay->TakePlainEnd();
    state_->relays.push_back(std::move(relay));
    SetSocketTimeouts(plain, timeout);
    beast::error_code ec;
    socket.assign(tcp::v4(), plain, ec);
    if (ec) {
      ::close(plain);
      return Status::Errorf("{}: {}", url, ec.message());
    }
  } else {
    auto dialled = DialTcp(to.host, to.port, timeout);
    if (!dialled.ok()) return Status::Unavailable("ws://" + dialled.status().message());
    const int fd = *dialled;
    sockaddr_storage local{};
    socklen_t len = sizeof local;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len);
    beast::error_code ec;
    socket.assign(local.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      return Status::Errorf("{}: {}", url, ec.message());
    }
  }
  const int fd = socket.native_handle();
  auto impl = std::make_shared<Connection::Impl>(state_->ioc, std::move(socket), state_->options);
  impl->ws.set_option(websocket::stream_base::decorator([headers](websocket::request_type& req) {
    for (const auto& [k, v] : headers) req.set(k, v);
  }));
  beast::error_code ec;
  impl->ws.handshake(to.host + ":" + to.port, target, ec);
  if (ec == websocket::error::upgrade_declined) {
    // Beast 1.74 keeps the refusing answer to itself: its status is not known here.
    return Status::Unavailable(
        fmt::format("{}{}: the server refused the upgrade (an HTTP error, not 101)", url, target.substr(0, 200)));
  }
  if (ec) return Status::Unavailable(fmt::format("{}{}: {}", url, target.substr(0, 200), ec.message()));
  SetSocketTimeouts(fd, std::chrono::milliseconds(0));
  return state_->Start(std::move(impl), std::move(on_message), std::move(on_closed));
}

void Loop::Run() {
  state_->ioc.run();
  state_->ioc.restart();
}

void Loop::Stop() {
  std::lock_guard<std::mutex> lock(state_->mu);
  for (const auto& weak : state_->connections) {
    OnLoop(weak, state_->shared, [](Connection::Impl& c) { c.RequestClose(kGoingAway, "shutting down"); });
  }
}

}  // namespace hpc::ws
