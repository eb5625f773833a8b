// What keeps slow or greedy clients from holding the REST server: each connection runs on a
// thread of its own from an elastic pool (so ten clients trickling header bytes cannot starve
// the rest), and a watchdog closes connections that take longer than a deadline to send a
// request, or that exceed a per-address connection limit, with a JSON answer where none was
// sent yet.
//
// cpp-httplib gives no hook at accept time, so the watchdog finds the server's connections in
// the process's own descriptor table: sockets whose local port is the server's and that have a
// peer. Handlers tell it when a request is being served (not timed) and when its answer went out.
#pragma once

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace hpc::cp {

struct ConnectionLimits {
  int max_per_client = 128;           // open connections from one address
  int request_deadline_seconds = 10;  // to send a whole request (headers and body) once connected or after an answer
  size_t max_threads = 512;           // connections served at once; more wait for a thread
};

// cpp-httplib listens with a backlog of 5: a burst of clients connecting at once overflows it and
// waits for the kernel's retransmissions. This raises the backlog of the server's listening
// socket(s) on `server_port`; returns how many it changed.
int WidenListenBacklog(int server_port, int backlog);

// The descriptor of the server's connection on `local_port` from peer `peer_host`:`peer_port`
// (as httplib reports remote_addr and remote_port), or -1: what a handler takes over to serve a
// WebSocket on it (websocket_upgrade.h).
int FindConnection(int local_port, const std::string& peer_host, int peer_port);

class ConnectionWatchdog {
 public:
  explicit ConnectionWatchdog(ConnectionLimits limits) : limits_(limits) {}
  ~ConnectionWatchdog();
  // `plain_http`: answers may be written in clear (not on a TLS connection).
  void Start(int server_port, bool plain_http);
  void Stop();

  // The request from this peer reached its handler: not timed until its answer is sent.
  void RequestStarted(const std::string& address, int port);
  void ResponseSent(const std::string& address, int port);

  // For tests and metrics.
  uint64_t closed_slow() const { return closed_slow_; }
  uint64_t closed_over_limit() const { return closed_over_limit_; }

 private:
  struct Connection {
    int64_t first_seen_ms = 0;
    int64_t deadline_ms = 0;
    bool busy = false;
    bool answered = false;  // at least one answer went out on it
  };
  using Peer = std::pair<std::string, int>;  // address, port
  void Run();
  void Scan();
  int64_t NowMs() const;

  const ConnectionLimits limits_;
  int port_ = 0;
  bool plain_http_ = true;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
  std::map<Peer, Connection> connections_;
  std::atomic<uint64_t> closed_slow_{0}, closed_over_limit_{0};
};

}  // namespace hpc::cp
