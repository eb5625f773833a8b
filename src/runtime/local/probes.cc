#include "runtime/local/local_runtime_internal.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

namespace hpc::runtime::local {

using nlohmann::json;

namespace {

// A non-blocking TCP connection to ip:port established within `timeout_ms`: its descriptor, or
// -1. The caller closes it.
int ConnectWithin(const std::string& ip, int port, int timeout_ms) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip.c_str(), &addr.sin_addr);
  bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    ok = ::poll(&p, 1, timeout_ms) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
  }
  if (!ok) {
    ::close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

bool TcpConnects(const std::string& ip, int port, int timeout_ms) {
  int fd = ConnectWithin(ip, port, timeout_ms);
  if (fd < 0) return false;
  ::close(fd);
  return true;
}

// Whether an HTTP server on ip:port answers a request within the timeout: any status line will
// do. A stopped (SIGSTOP) or hung server still accepts the connection in the kernel, so a TCP
// connect alone cannot tell.
bool HttpAnswers(const std::string& ip, int port, int timeout_ms, const std::string& path) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  int fd = ConnectWithin(ip, port, timeout_ms);
  if (fd < 0) return false;
  const std::string request =
      "GET " + (path.empty() ? std::string("/") : path) + " HTTP/1.0\r\nUser-Agent: hpcplane-probe\r\n\r\n";
  bool ok = false;
  if (::send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size())) {
    const auto left = std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now()).count());
    pollfd r{fd, POLLIN, 0};
    // "HTTP/1.1 204": the status line's first 12 bytes, which may come in more than one read.
    std::string head;
    char buf[16];
    while (head.size() < 12 && ::poll(&r, 1, static_cast<int>(left)) == 1) {
      ssize_t n = ::recv(fd, buf, sizeof buf, 0);
      if (n <= 0) break;
      head.append(buf, static_cast<size_t>(n));
    }
    ok = head.rfind("HTTP/", 0) == 0 &&
         (path.empty() ? head.size() >= 5 : head.size() >= 12 && head[8] == ' ' && head[9] == '2');
  }
  ::close(fd);
  return ok;
}

bool LocalRuntime::ProbeReady(const PodSpec& spec, const PodState& st) {
  if (spec.readiness.tcp_port > 0 && !spec.readiness.http_path.empty()) {
    return HttpAnswers(st.ip, spec.readiness.tcp_port, 1000, spec.readiness.http_path);
  }
  if (spec.readiness.tcp_port > 0) return TcpConnects(st.ip, spec.readiness.tcp_port, 200);
  if (!spec.readiness.command.empty()) {
    ExecOptions o;
    o.argv = spec.readiness.command;
    o.timeout = std::chrono::milliseconds(3000);
    auto r = Exec(spec.name, o);
    return r.ok() && r->exit_code == 0;
  }
  return true;
}

bool LocalRuntime::ProbeAlive(const PodSpec& spec, const PodState& st) {
  const int timeout_ms = spec.liveness.timeout_seconds * 1000;
  if (spec.liveness.http_port > 0) {
    return HttpAnswers(st.ip, spec.liveness.http_port, timeout_ms, spec.liveness.http_path);
  }
  ExecOptions o;
  o.argv = spec.liveness.command;
  o.timeout = std::chrono::milliseconds(timeout_ms);
  auto r = Exec(spec.name, o);
  return r.ok() && r->exit_code == 0;
}

}  // namespace hpc::runtime::local
