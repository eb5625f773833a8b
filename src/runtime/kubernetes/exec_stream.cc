#include "runtime/kubernetes/exec_stream.h"

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/beast/websocket.hpp>
#include <boost/beast/websocket/ssl.hpp>

#include <algorithm>

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
constexpr unsigned char kStdin = 0, kStdout = 1, kStderr = 2, kStatus = 3, kClose = 255;
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

asio::awaitable<void> Run(asio::ssl::context& tls, Endpoint where, std::string target, std::string token,
                          std::string stdin_data, Session* session) {
  try {
    auto executor = co_await asio::this_coro::executor;
    websocket::stream<beast::ssl_stream<beast::tcp_stream>> ws(executor, tls);
    SSL* ssl = ws.next_layer().native_handle();
    // The certificate must name the server, as for every other API request.
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
    ws.set_option(websocket::stream_base::decorator([&token](websocket::request_type& req) {
      if (!token.empty()) req.set(beast::http::field::authorization, "Bearer " + token);
      req.set(beast::http::field::sec_websocket_protocol, fmt::format("{}, {}", kProtocolV5, kProtocolV4));
    }));
    websocket::response_type response;
    boost::system::error_code refused;
    co_await ws.async_handshake(response, where.host + ":" + where.port, target,
                                asio::redirect_error(asio::use_awaitable, refused));
    if (refused) {
      // The API's answer instead of an upgrade: the pod is gone, not running, forbidden...
      const int code = static_cast<int>(response.result_int());
      if (code == 0) throw boost::system::system_error(refused);
      auto body = json::parse(response.body(), nullptr, false);
      const std::string why = body.is_object() ? body.value("message", "") : response.body().substr(0, 200);
      session->status = code == 404 ? Status::NotFound(fmt::format("exec: {} {}", code, why))
                                    : Status::Error(fmt::format("exec: {} {}", code, why));
      co_return;
    }
    const std::string protocol(response[beast::http::field::sec_websocket_protocol]);
    ws.binary(true);
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
      beast::flat_buffer buffer;
      boost::system::error_code ec;
      co_await ws.async_read(buffer, asio::redirect_error(asio::use_awaitable, ec));
      // The server's close (or its dropped connection, while the close handshake is answered)
      // ends the stream; what it means is in the status read before it.
      if (ec == websocket::error::closed || ec == asio::error::eof || ec == asio::ssl::error::stream_truncated ||
          ec == asio::error::broken_pipe || ec == asio::error::connection_reset) {
        break;
      }
      if (ec) throw boost::system::system_error(ec);
      const std::string message = beast::buffers_to_string(buffer.data());
      if (message.empty()) continue;
      const unsigned char channel = static_cast<unsigned char>(message[0]);
      const std::string_view data(message.data() + 1, message.size() - 1);
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

}  // namespace

std::string PodExecPath(const PodExecRequest& r) {
  std::string path = fmt::format("/api/v1/namespaces/{}/pods/{}/exec?container={}&stdout=true&stderr=true",
                                 QueryEscape(r.namespace_name), QueryEscape(r.pod), QueryEscape(r.container));
  if (!r.stdin_data.empty()) path += "&stdin=true";
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

  asio::io_context io;
  Session session;
  asio::co_spawn(io, Run(tls, where, PodExecPath(request), token, request.stdin_data, &session), asio::detached);
  io.run_for(request.timeout);
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
