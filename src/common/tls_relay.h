// WebSockets over TLS for the plain-TCP ws::Loop (websocket.h): a TLS session's bytes relayed, on
// a thread of their own, to one end of a socket pair whose other end the Loop serves as it serves
// a TCP connection.
//
// Why a relay and not Beast's TLS stream: on the server, cpp-httplib has already made the TLS
// session and read the upgrade request through it, and Boost 1.74's TLS stream cannot adopt an
// existing session. The same relay then serves the agent's side (DialTls), so the Loop has one
// kind of connection.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"

struct ssl_st;  // OpenSSL's SSL, kept out of this header

namespace hpc::ws {

class TlsRelay {
 public:
  // Relays the established TLS session `ssl` on socket `fd` to the plain end. With `owned`, the
  // relay frees `ssl` and closes `fd` when it is destroyed; otherwise both stay the caller's
  // (cpp-httplib's connection), which must outlive the relay, and fd gets its blocking mode back
  // when the relay ends. The relay's thread blocks SIGPIPE for itself.
  static Result<std::unique_ptr<TlsRelay>> Start(ssl_st* ssl, int fd, bool owned);
  // Waits until the relay ended: both sides closed (the second at most kDrainTimeout after the
  // first), or the plain end broke.
  ~TlsRelay();
  TlsRelay(const TlsRelay&) = delete;
  TlsRelay& operator=(const TlsRelay&) = delete;

  // The plain end, the caller's from then on (a Loop serves it): the relay ends once it is closed.
  int TakePlainEnd();

  static constexpr std::chrono::seconds kDrainTimeout{5};

 private:
  struct Flow;
  TlsRelay(ssl_st* ssl, int fd, bool owned, int relay_end, int plain_end);
  void Run();
  void TlsToPlain(Flow& f);
  void PlainToTls(Flow& f);
  bool TlsWaits(int n, short* events) const;

  ssl_st* ssl_;
  int fd_;
  int fd_flags_ = 0;  // fd's file status flags before the relay made it non-blocking
  bool owned_;
  int relay_end_;
  int plain_end_;
  std::thread thread_;
};

// Dials host:port over TLS within `timeout`, verifying the server's certificate against `ca_file`
// (the system's CAs when empty) and its name (or IP address) against `host`; the session relayed
// as above.
Result<std::unique_ptr<TlsRelay>> DialTls(const std::string& host, const std::string& port, const std::string& ca_file,
                                          std::chrono::milliseconds timeout);

}  // namespace hpc::ws
