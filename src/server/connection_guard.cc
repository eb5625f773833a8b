#include "server/connection_guard.h"

#include <dirent.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace hpc::cp {
namespace {

constexpr auto kScanInterval = std::chrono::milliseconds(200);

// The numeric host and port of a socket address, as httplib reports remote_addr.
bool Numeric(const sockaddr_storage& a, socklen_t len, std::string* host, int* port) {
  char h[NI_MAXHOST], p[NI_MAXSERV];
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&a), len, h, sizeof h, p, sizeof p,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return false;
  }
  *host = h;
  *port = std::atoi(p);
  return true;
}

bool PeerOf(int fd, int server_port, std::string* host, int* port) {
  sockaddr_storage local{}, peer{};
  socklen_t llen = sizeof local, plen = sizeof peer;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0) return false;  // not a socket
  if (local.ss_family != AF_INET && local.ss_family != AF_INET6) return false;
  std::string lhost;
  int lport = 0;
  if (!Numeric(local, llen, &lhost, &lport) || lport != server_port) return false;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) != 0) return false;  // the listening socket
  return Numeric(peer, plen, host, port);
}

}  // namespace

int WidenListenBacklog(int server_port, int backlog) {
  int widened = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      int fd = std::atoi(e->d_name);
      sockaddr_storage local{}, peer{};
      socklen_t llen = sizeof local, plen = sizeof peer;
      std::string host;
      int port = 0, listening = 0;
      socklen_t olen = sizeof listening;
      if (fd == dirfd(d) || getsockname(fd, reinterpret_cast<sockaddr*>(&local), &llen) != 0) continue;
      if (!Numeric(local, llen, &host, &port) || port != server_port) continue;
      if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &plen) == 0) continue;
      if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &olen) != 0 || !listening) continue;
      // listen() again on a listening socket only changes its backlog.
      if (::listen(fd, backlog) == 0) ++widened;
    }
    closedir(d);
  }
  return widened;
}

int FindConnection(int local_port, const std::string& peer_host, int peer_port) {
  int found = -1;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      const int fd = std::atoi(e->d_name);
      std::string host;
      int port = 0;
      if (fd != dirfd(d) && PeerOf(fd, local_port, &host, &port) && host == peer_host && port == peer_port) {
        found = fd;
        break;
      }
    }
    closedir(d);
  }
  return found;
}

ConnectionWatchdog::~ConnectionWatchdog() { Stop(); }

void ConnectionWatchdog::Start(int server_port, bool plain_http) {
  port_ = server_port;
  plain_http_ = plain_http;
  thread_ = std::thread([this] { Run(); });
}

void ConnectionWatchdog::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

int64_t ConnectionWatchdog::NowMs() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void ConnectionWatchdog::RequestStarted(const std::string& address, int port) {
  std::lock_guard<std::mutex> l(mu_);
  connections_[{address, port}].busy = true;
}

void ConnectionWatchdog::ResponseSent(const std::string& address, int port) {
  std::lock_guard<std::mutex> l(mu_);
  auto& c = connections_[{address, port}];
  c.busy = false;
  c.answered = true;
  c.deadline_ms = NowMs() + limits_.request_deadline_seconds * 1000;
}

void ConnectionWatchdog::Run() {
  std::unique_lock<std::mutex> l(mu_);
  while (!stop_) {
    l.unlock();
    Scan();
    l.lock();
    cv_.wait_for(l, kScanInterval, [&] { return stop_; });
  }
}

void ConnectionWatchdog::Scan() {
  struct Open {
    int fd;
    Peer peer;
  };
  std::vector<Open> open;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
      int fd = std::atoi(e->d_name);
      Open o{fd, {}};
      if (fd != dirfd(d) && PeerOf(fd, port_, &o.peer.first, &o.peer.second)) open.push_back(std::move(o));
    }
    closedir(d);
  }

  struct Close {
    Open conn;
    int status;  // 408 or 429; 0: close without an answer
  };
  std::vector<Close> to_close;
  {
    std::lock_guard<std::mutex> l(mu_);
    const int64_t now = NowMs();
    std::map<Peer, Connection> live;
    std::map<std::string, std::vector<const Open*>> by_address;
    for (const auto& o : open) {
      auto it = connections_.find(o.peer);
      Connection c = it != connections_.end() ? it->second : Connection{};
      if (c.first_seen_ms == 0) c.first_seen_ms = now;
      if (c.deadline_ms == 0) c.deadline_ms = now + limits_.request_deadline_seconds * 1000;
      live[o.peer] = c;
      by_address[o.peer.first].push_back(&o);
    }
    connections_ = std::move(live);
    for (auto& [address, conns] : by_address) {
      int excess = static_cast<int>(conns.size()) - limits_.max_per_client;
      if (excess <= 0) continue;
      // Held connections go, newest first: open for a second or more and not being served.
      // Connections that come and go (a client opening one per request) are not held ones, even
      // when a scan catches many of them between their answer and their close.
      std::vector<const Open*> held;
      for (const Open* o : conns) {
        const Connection& c = connections_[o->peer];
        if (!c.busy && now - c.first_seen_ms >= 1000) held.push_back(o);
      }
      std::sort(held.begin(), held.end(), [&](const Open* a, const Open* b) {
        return connections_[a->peer].first_seen_ms > connections_[b->peer].first_seen_ms;
      });
      for (size_t i = 0; i < held.size() && excess > 0; ++i, --excess) {
        to_close.push_back({*held[i], connections_[held[i]->peer].answered ? 0 : 429});
      }
    }
    for (const auto& o : open) {
      const Connection& c = connections_[o.peer];
      bool already = std::any_of(to_close.begin(), to_close.end(), [&](const Close& x) { return x.conn.fd == o.fd; });
      if (!already && !c.busy && now > c.deadline_ms) to_close.push_back({o, 408});
    }
  }

  for (const auto& x : to_close) {
    // The descriptor may have been closed and reused since the scan: act only on the same peer.
    Peer now_peer;
    if (!PeerOf(x.conn.fd, port_, &now_peer.first, &now_peer.second) || now_peer != x.conn.peer) continue;
    if (x.status == 429) {
      ++closed_over_limit_;
      spdlog::warn("closing a connection from {}: more than {} open from that address", x.conn.peer.first,
                   limits_.max_per_client);
    } else {
      ++closed_slow_;
      spdlog::warn("closing a connection from {}:{}: no whole request within {} s", x.conn.peer.first,
                   x.conn.peer.second, limits_.request_deadline_seconds);
    }
    if (x.status != 0 && plain_http_) {
      std::string message =
          x.status == 429
              ? fmt::format("too many connections from {} (limit {})", x.conn.peer.first, limits_.max_per_client)
              : fmt::format("request not received within {} s", limits_.request_deadline_seconds);
      std::string body = fmt::format(R"({{"error":{{"code":{},"message":"{}"}}}})", x.status, message) + "\n";
      std::string reply = fmt::format(
          "HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n"
          "Connection: close\r\n\r\n{}",
          x.status, x.status == 429 ? "Too Many Requests" : "Request Timeout", body.size(), body);
      (void)::send(x.conn.fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    }
    ::shutdown(x.conn.fd, SHUT_RDWR);
  }
}

}  // namespace hpc::cp
