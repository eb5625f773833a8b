#include "runtime/kubernetes/exec_stream.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <deque>
#include <functional>
#include <optional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace hpc::runtime::kubernetes {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using tcp = asio::ip::tcp;
using nlohmann::json;

namespace {

constexpr const char* kProtocolV5 = "v5.channel.k8s.io";
constexpr const char* kProtocolV4 = "v4.channel.k8s.io";
constexpr unsigned char kStdin = 0, kStdout = 1, kStderr = 2, kStatus = 3, kResize = 4, kClose = 255;
// A command's output is collected in memory: more than this is refused rather than held.
constexpr size_t kMaxOutputBytes = 64u << 20;

using Endpoint = ServerAddress;

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  asio::ip::make_address(host, ec);
  return !ec;
}

struct Session {
  ProcessResult result;
  Status status = Status::Ok();
  bool finished = false;
};

using WebSocket = websocket::stream<beast::ssl_stream<beast::tcp_stream>>;

// Opens the exec WebSocket: TLS to the API server (its certificate must name it, as for every
// other API request), the bearer token, the channel protocols. Returns the protocol the server
// chose, or the API's refusal as an error (the pod is gone, not running, forbidden...).
asio::awaitable<Result<std::string>> Connect(WebSocket& ws, Endpoint where, std::string target, std::string token) {
  auto executor = co_await asio::this_coro::executor;
  SSL* ssl = ws.next_layer().native_handle();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (IsIpAddress(where.host)) {
    X509_VERIFY_PARAM_set1_ip_asc(param, where.host.c_str());
  } else {
    X509_VERIFY_PARAM_set1_host(param, where.host.c_str(), 0);
    SSL_set_tlsext_host_name(ssl, where.host.c_str());
  }
  tcp::resolver resolver(executor);
  auto addresses = co_await resolver.async_resolve(where.host, where.port, asio::use_awaitable);
  co_await beast::get_lowest_layer(ws).async_connect(addresses, asio::use_awaitable);
  beast::get_lowest_layer(ws).socket().set_option(tcp::no_delay(true));
  co_await ws.next_layer().async_handshake(asio::ssl::stream_base::client, asio::use_awaitable);
  ws.set_option(websocket::stream_base::decorator([token](websocket::request_type& req) {
    if (!token.empty()) req.set(beast::http::field::authorization, "Bearer " + token);
    req.set(beast::http::field::sec_websocket_protocol, fmt::format("{}, {}", kProtocolV5, kProtocolV4));
  }));
  websocket::response_type response;
  boost::system::error_code refused;
  co_await ws.async_handshake(response, where.host + ":" + where.port, target,
                              asio::redirect_error(asio::use_awaitable, refused));
  if (refused) {
    const int code = static_cast<int>(response.result_int());
    if (code == 0) throw boost::system::system_error(refused);
    auto body = json::parse(response.body(), nullptr, false);
    const std::string why = body.is_object() ? body.value("message", "") : response.body().substr(0, 200);
    const std::string message = fmt::format("exec: {} {}", code, why);
    if (code == 404) co_return Status::NotFound(message);
    if (code == 401) co_return Status::Unauthenticated(message);
    if (code == 403) co_return Status::PermissionDenied(message);
    co_return Status::Error(message);
  }
  ws.binary(true);
  co_return std::string(response[beast::http::field::sec_websocket_protocol]);
}

// The server's close (or its dropped connection, while the close handshake is answered) ends
// a stream; what it means is in the status read before it.
bool StreamEnded(const boost::system::error_code& ec) {
  return ec == websocket::error::closed || ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
         ec == asio::error::broken_pipe || ec == asio::error::connection_reset;
}

// The next frame's channel and data; nullopt once the stream ended. Empty frames are skipped.
asio::awaitable<std::optional<std::pair<unsigned char, std::string>>> ReadFrame(WebSocket& ws) {
  for (;;) {
    beast::flat_buffer buffer;
    boost::system::error_code ec;
    co_await ws.async_read(buffer, asio::redirect_error(asio::use_awaitable, ec));
    if (StreamEnded(ec)) co_return std::nullopt;
    if (ec) throw boost::system::system_error(ec);
    std::string message = beast::buffers_to_string(buffer.data());
    if (message.empty()) continue;
    const auto channel = static_cast<unsigned char>(message[0]);
    co_return std::make_pair(channel, message.substr(1));
  }
}

asio::awaitable<void> Run(asio::ssl::context& tls, Endpoint where, std::string target, std::string token,
                          std::string stdin_data, Session* session) {
  try {
    auto executor = co_await asio::this_coro::executor;
    WebSocket ws(executor, tls);
    auto connected = co_await Connect(ws, where, target, token);
    if (!connected.ok()) {
      session->status = connected.status();
      co_return;
    }
    const std::string protocol = *connected;
    if (!stdin_data.empty()) {
      if (protocol != kProtocolV5) {
        session->status =
            Status::FailedPrecondition(fmt::format("exec: the API server speaks {}, which cannot close stdin",
                                                   protocol.empty() ? "no channel protocol" : protocol));
        co_return;
      }
      std::string frame(1, static_cast<char>(kStdin));
      frame += stdin_data;
      co_await ws.async_write(asio::buffer(frame), asio::use_awaitable);
      const char close_stdin[2] = {static_cast<char>(kClose), static_cast<char>(kStdin)};
      co_await ws.async_write(asio::buffer(close_stdin, 2), asio::use_awaitable);
    }
    std::string status_message;
    size_t total = 0;
    for (;;) {
      auto frame = co_await ReadFrame(ws);
      if (!frame) break;
      const auto& [channel, data] = *frame;
      total += data.size();
      if (total > kMaxOutputBytes) {
        session->status = Status::Error(fmt::format("exec: output over {} MiB", kMaxOutputBytes >> 20));
        co_return;
      }
      if (channel == kStdout) session->result.out.append(data);
      if (channel == kStderr) session->result.err.append(data);
      if (channel == kStatus) {
        // The last message of an exec: the command has ended.
        status_message.append(data);
        break;
      }
    }
    if (status_message.empty()) {
      session->status = Status::Unavailable("exec: the stream ended without the command's status");
      co_return;
    }
    auto code = ExitCodeFromExecStatus(status_message);
    if (!code.ok()) {
      session->status = code.status();
      co_return;
    }
    session->result.exit_code = *code;
    session->finished = true;
  } catch (const boost::system::system_error& e) {
    session->status = Status::Unavailable(fmt::format("exec: {}", e.code().message()));
  }
}

// An attached session (ExecAttached): what is read from the input goes to stdin, what the
// command writes goes to the output, resizes go on the resize channel. Frames are written one at
// a time (a WebSocket allows one write in flight): Send queues them behind the one being written.
// The attached command is started by a shell that first writes its own pid (which the command
// keeps: exec) between these, where no program writes: a hangup of the attachment is passed on
// to that pid, as a terminal's hangup would be, since closing pods/exec ends nothing in the pod.
constexpr std::string_view kPidStart = "\033]hpcplane-pid;", kPidEnd = "\007";
constexpr const char* kAnnouncePid = "printf '\\033]hpcplane-pid;%s\\007' \"$$\"; exec \"$@\"";

struct AttachedSession {
  const ApiClient* api = nullptr;
  PodExecRequest request;  // what runs (for the hangup's own exec in the same container)
  WebSocket* ws = nullptr;
  int out_fd = -1;
  bool tty = false;
  std::string announced;  // output before the pid was read
  bool pid_read = false;
  std::function<void()> start_input;  // once the pid is read (or the command announced none)
  int64_t pid = 0;                    // the command's, in its container
  bool hung_up = false;
  std::deque<std::string> outgoing;
  bool writing = false;
  std::string status_message;
  Status status = Status::Ok();
  bool ended = false;

  void Send(std::string frame) {
    outgoing.push_back(std::move(frame));
    if (writing) return;
    writing = true;
    asio::co_spawn(ws->get_executor(), Drain(), asio::detached);
  }
  asio::awaitable<void> Drain() {
    while (!outgoing.empty() && !ended) {
      std::string frame = std::move(outgoing.front());
      outgoing.pop_front();
      boost::system::error_code ec;
      co_await ws->async_write(asio::buffer(frame), asio::redirect_error(asio::use_awaitable, ec));
      if (ec) break;  // the reader sees the stream end
    }
    writing = false;
  }
  // The terminal's size as the input terminal has it now, on the resize channel.
  void SendSize(int in_fd) {
    struct winsize size {};
    if (ioctl(in_fd, TIOCGWINSZ, &size) != 0 || size.ws_col == 0) return;
    Send(std::string(1, static_cast<char>(kResize)) + json{{"Width", size.ws_col}, {"Height", size.ws_row}}.dump());
  }
};

// Output, once the pid announcement before it is read and left out.
void Output(AttachedSession* s, std::string_view data);

// Blocking writes, also when the descriptor is non-blocking: on a pseudo-terminal stdin and
// stdout share one open file, which the input's asio descriptor made non-blocking; a slow reader
// must slow the command, not lose its output.
void WriteAll(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd writable = {fd, POLLOUT, 0};
      (void)::poll(&writable, 1, -1);
      continue;
    }
    if (n <= 0) return;  // the reader is gone: what follows has nowhere to go
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void Output(AttachedSession* s, std::string_view data) {
  if (s->pid_read) return WriteAll(s->out_fd, data);
  s->announced.append(data);
  // The announcement is the command's very first output (no input is sent before it is read, so
  // no echo of typed text precedes it): anything else there is no announcement.
  const bool starts = s->announced.compare(0, std::min(s->announced.size(), kPidStart.size()),
                                           kPidStart.substr(0, std::min(s->announced.size(), kPidStart.size()))) == 0;
  const size_t end = starts ? s->announced.find(kPidEnd, kPidStart.size()) : std::string::npos;
  if (starts && end == std::string::npos && s->announced.size() < kPidStart.size() + 12) return;  // more to come
  s->pid_read = true;
  if (end != std::string::npos) {
    const std::string digits = s->announced.substr(kPidStart.size(), end - kPidStart.size());
    const bool number = !digits.empty() && digits.size() < 10 &&
                        std::all_of(digits.begin(), digits.end(), [](unsigned char c) { return std::isdigit(c); });
    if (number) s->pid = std::stoll(digits);
    s->announced.erase(0, end + kPidEnd.size());
  }
  WriteAll(s->out_fd, s->announced);
  s->announced.clear();
  if (s->start_input) {
    // Taken out first: the function must outlive its own call (it is not reset from inside).
    auto start = std::move(s->start_input);
    s->start_input = nullptr;
    start();
  }
}

// SIGHUP or SIGTERM (the agent closing a terminal, stopping JupyterLab): the command gets SIGHUP
// in its container, and SIGKILL 5 s later if it still runs; then the attachment ends.
asio::awaitable<void> WatchHangups(AttachedSession* s, asio::signal_set* signals, asio::io_context* io) {
  boost::system::error_code ec;
  co_await signals->async_wait(asio::redirect_error(asio::use_awaitable, ec));
  if (ec || s->ended) co_return;
  s->hung_up = true;
  if (s->pid > 0) {
    PodExecRequest hangup = s->request;
    hangup.stdin = hangup.tty = false;
    hangup.argv = {"sh", "-c", "kill -HUP \"$0\"; (sleep 5; kill -KILL \"$0\") >/dev/null 2>&1 &",
                   std::to_string(s->pid)};
    hangup.timeout = std::chrono::milliseconds(1500);
    auto sent = ExecInPod(*s->api, hangup);
    if (!sent.ok() || !sent->ok()) {
      const std::string why = sent.ok() ? sent->err : sent.status().message();
      std::fprintf(stderr, "kube-attach: the hangup did not reach pid %lld in pod %s: %s\n",
                   static_cast<long long>(s->pid), s->request.pod.c_str(), why.c_str());
    }
  }
  s->ended = true;
  io->stop();
}

asio::awaitable<void> PumpInput(AttachedSession* s, asio::posix::stream_descriptor* input, bool can_close) {
  std::array<char, 4096> buffer;
  for (;;) {
    boost::system::error_code ec;
    size_t n = co_await input->async_read_some(asio::buffer(buffer), asio::redirect_error(asio::use_awaitable, ec));
    if (ec || s->ended) break;
    std::string frame(1, static_cast<char>(kStdin));
    frame.append(buffer.data(), n);
    s->Send(std::move(frame));
  }
  // The input ended: so does the command's stdin, where the protocol can say so.
  if (!s->ended && can_close) s->Send(std::string{static_cast<char>(kClose), static_cast<char>(kStdin)});
}

asio::awaitable<void> WatchResizes(AttachedSession* s, asio::signal_set* signals, int in_fd) {
  for (;;) {
    boost::system::error_code ec;
    co_await signals->async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec || s->ended) co_return;
    s->SendSize(in_fd);
  }
}

asio::awaitable<void> RunAttached(asio::ssl::context& tls, Endpoint where, std::string target, std::string token,
                                  int in_fd, AttachedSession* s, asio::io_context* io, asio::signal_set* hangups) {
  auto executor = co_await asio::this_coro::executor;
  try {
    WebSocket ws(executor, tls);
    auto connected = co_await Connect(ws, where, target, token);
    if (!connected.ok()) {
      s->status = connected.status();
      co_return;
    }
    s->ws = &ws;
    asio::posix::stream_descriptor input(executor, ::dup(in_fd));
    asio::signal_set resizes(executor, SIGWINCH);
    if (s->tty) {
      s->SendSize(in_fd);
      asio::co_spawn(executor, WatchResizes(s, &resizes, in_fd), asio::detached);
    }
    const bool can_close = *connected == kProtocolV5;
    s->start_input = [s, executor, &input, can_close] {
      asio::co_spawn(executor, PumpInput(s, &input, can_close), asio::detached);
    };
    for (;;) {
      auto frame = co_await ReadFrame(ws);
      if (!frame) break;
      const auto& [channel, data] = *frame;
      if (channel == kStdout || channel == kStderr) Output(s, data);
      if (channel == kStatus) {
        s->status_message.append(data);
        break;
      }
    }
    s->ended = true;
    // Ends the input and resize waits; the io_context then runs out of work.
    boost::system::error_code ignored;
    s->start_input = nullptr;
    input.cancel(ignored);
    resizes.cancel(ignored);
    hangups->cancel(ignored);
    beast::get_lowest_layer(ws).socket().shutdown(tcp::socket::shutdown_both, ignored);
    beast::get_lowest_layer(ws).socket().close(ignored);
  } catch (const boost::system::system_error& e) {
    s->status = Status::Unavailable(fmt::format("exec: {}", e.code().message()));
  }
  s->ended = true;
  // Whatever still waits (the input's read, a resize) is stopped with the io_context.
  io->stop();
}

Result<asio::ssl::context> TlsFor(const ApiClient& api) {
  asio::ssl::context tls(asio::ssl::context::tls_client);
  tls.set_verify_mode(asio::ssl::verify_peer);
  boost::system::error_code ec;
  if (api.connection().ca_pem.empty()) {
    tls.set_default_verify_paths(ec);
  } else {
    tls.add_certificate_authority(asio::buffer(api.connection().ca_pem), ec);
  }
  if (ec) return Status::InvalidArgument("", fmt::format("exec: the API's CA: {}", ec.message()));
  if (!api.connection().client_cert_pem.empty()) {
    tls.use_certificate_chain(asio::buffer(api.connection().client_cert_pem), ec);
    if (!ec) tls.use_private_key(asio::buffer(api.connection().client_key_pem), asio::ssl::context::pem, ec);
    if (ec) return Status::InvalidArgument("", fmt::format("exec: the client certificate: {}", ec.message()));
  }
  return tls;
}

}  // namespace

std::string PodExecPath(const PodExecRequest& r) {
  std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}/exec?container={}&stdout=true",
                                 QueryEscape(r.namespace_name), QueryEscape(r.pod), QueryEscape(r.container));
  // On a terminal the command's stderr is its stdout.
  path += r.tty ? "&tty=true" : "&stderr=true";
  if (r.stdin || !r.stdin_data.empty()) path += "&stdin=true";
  for (const auto& arg : r.argv) path += "&command=" + QueryEscape(arg);
  return path;
}

Result<int> ExitCodeFromExecStatus(const std::string& status_json) {
  auto j = json::parse(status_json, nullptr, false);
  if (!j.is_object()) return Status::Unavailable("exec: the status channel did not carry a Status object");
  const std::string status = j.value("status", "");
  if (status == "Success") return 0;
  if (j.value("reason", "") == "NonZeroExitCode") {
    for (const auto& cause : j.value("details", json::object()).value("causes", json::array())) {
      if (cause.value("reason", "") != "ExitCode") continue;
      const std::string code = cause.value("message", "");
      if (!code.empty() && code.size() < 4 && std::all_of(code.begin(), code.end(), ::isdigit)) return std::stoi(code);
    }
  }
  return Status::Error(fmt::format("exec failed: {}", j.value("message", status_json.substr(0, 200))));
}

Result<ProcessResult> ExecInPod(const ApiClient& api, const PodExecRequest& request) {
  if (request.argv.empty()) return Status::InvalidArgument("", "exec: no command given");
  ASSIGN_OR_RETURN(Endpoint where, ServerAddressOf(api.connection().server));
  ASSIGN_OR_RETURN(std::string token, api.BearerToken());
  ASSIGN_OR_RETURN(asio::ssl::context tls, TlsFor(api));
  asio::io_context io;
  Session session;
  asio::co_spawn(io, Run(tls, where, PodExecPath(request), token, request.stdin_data, &session), asio::detached);
  // In slices, to see a cancellation; the coroutine is dropped with the io_context either way.
  const auto deadline = std::chrono::steady_clock::now() + request.timeout;
  while (!io.stopped() && std::chrono::steady_clock::now() < deadline) {
    if (request.cancelled && request.cancelled->load()) return Status::Unavailable("exec: cancelled");
    io.run_for(std::min<std::chrono::steady_clock::duration>(std::chrono::milliseconds(100),
                                                             deadline - std::chrono::steady_clock::now()));
  }
  if (!io.stopped()) {
    // Out of time: the coroutine is dropped with the io_context, which closes the connection.
    session.result.timed_out = true;
    session.result.exit_code = -1;
    return session.result;
  }
  if (!session.status.ok()) return session.status;
  return session.result;
}

}  // namespace hpc::runtime::kubernetes

namespace hpc::runtime::kubernetes {

Result<int> ExecAttached(const ApiClient& api, PodExecRequest request, int in_fd, int out_fd) {
  if (request.argv.empty()) return Status::InvalidArgument("", "exec: no command given");
  request.stdin = true;
  request.stdin_data.clear();
  request.argv.insert(request.argv.begin(), {"sh", "-c", kAnnouncePid, "sh"});
  ASSIGN_OR_RETURN(Endpoint where, ServerAddressOf(api.connection().server));
  ASSIGN_OR_RETURN(std::string token, api.BearerToken());
  ASSIGN_OR_RETURN(asio::ssl::context tls, TlsFor(api));
  // Raw input for the session: keys (Ctrl-C, Ctrl-D) reach the container's terminal as bytes,
  // and its terminal echoes them, not this one.
  struct termios saved {};
  const bool raw = request.tty && isatty(in_fd) && tcgetattr(in_fd, &saved) == 0;
  if (raw) {
    struct termios t = saved;
    cfmakeraw(&t);
    tcsetattr(in_fd, TCSANOW, &t);
  }
  asio::io_context io;
  // Hangups are caught from the start: one during the handshake must not kill this process
  // before it could pass the hangup on.
  asio::signal_set hangups(io, SIGHUP, SIGTERM);
  AttachedSession session;
  session.api = &api;
  session.request = request;
  session.out_fd = out_fd;
  session.tty = request.tty;
  asio::co_spawn(io, WatchHangups(&session, &hangups, &io), asio::detached);
  asio::co_spawn(io, RunAttached(tls, where, PodExecPath(request), token, in_fd, &session, &io, &hangups),
                 asio::detached);
  io.run();
  if (raw) tcsetattr(in_fd, TCSANOW, &saved);
  if (!session.pid_read) WriteAll(out_fd, session.announced);
  if (session.hung_up) return 128 + SIGHUP;
  if (!session.status.ok()) return session.status;
  if (session.status_message.empty()) return Status::Unavailable("exec: the stream ended without the command's status");
  return ExitCodeFromExecStatus(session.status_message);
}

}  // namespace hpc::runtime::kubernetes
