#include "common/tls_relay.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "common/tcp_dial.h"

namespace hpc::ws {

namespace {

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// OpenSSL's queued errors as one line (and the queue emptied).
std::string OpenSslErrors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out += (out.empty() ? "" : "; ") + std::string(buf);
  }
  return out.empty() ? "unknown TLS error" : out;
}

bool IsIpAddress(const std::string& host) {
  in6_addr a6{};
  in_addr a4{};
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 || ::inet_pton(AF_INET6, host.c_str(), &a6) == 1;
}

}  // namespace

Result<std::unique_ptr<TlsRelay>> TlsRelay::Start(ssl_st* ssl, int fd, bool owned) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) != 0) {
    return Status::Errorf("socketpair for a TLS WebSocket: {}", std::strerror(errno));
  }
  const int flags = ::fcntl(fd, F_GETFL);
  SetNonBlocking(fd);
  SetNonBlocking(pair[0]);
  std::unique_ptr<TlsRelay> relay(new TlsRelay(ssl, fd, owned, pair[0], pair[1]));
  relay->fd_flags_ = flags;
  relay->thread_ = std::thread([r = relay.get()] { r->Run(); });
  return relay;
}

TlsRelay::TlsRelay(ssl_st* ssl, int fd, bool owned, int relay_end, int plain_end)
    : ssl_(ssl), fd_(fd), owned_(owned), relay_end_(relay_end), plain_end_(plain_end) {}

TlsRelay::~TlsRelay() {
  if (plain_end_ >= 0) ::close(plain_end_);
  if (thread_.joinable()) thread_.join();
  ::close(relay_end_);
  if (owned_) {
    SSL_free(ssl_);
    ::close(fd_);
  }
}

int TlsRelay::TakePlainEnd() {
  const int fd = plain_end_;
  plain_end_ = -1;
  return fd;
}

// What the relay's thread holds between turns: bytes each way, which side ended, and what each
// side's socket must become (readable, writable) for the next turn to move.
struct TlsRelay::Flow {
  std::string to_plain, to_tls;
  bool tls_ended = false, tls_broken = false, plain_ended = false, notify_pending = false;
  bool plain_gone = false;  // the Loop's end refused a write: nothing more to do
  short tls_events = 0, plain_events = 0;
  bool moved = false;
  char buf[16384];
};

// After an SSL call returned `n` <= 0: whether it only waits for its socket (which it notes in
// `events`), or the session ended.
bool TlsRelay::TlsWaits(int n, short* events) const {
  const int err = SSL_get_error(ssl_, n);
  if (err == SSL_ERROR_WANT_READ) *events |= POLLIN;
  if (err == SSL_ERROR_WANT_WRITE) *events |= POLLOUT;
  return err == SSL_ERROR_WANT_READ || err == SSL_ERROR_WANT_WRITE;
}

// TLS records in, their bytes out to the Loop's end.
void TlsRelay::TlsToPlain(Flow& f) {
  if (!f.tls_ended && f.to_plain.empty()) {
    ERR_clear_error();  // SSL_get_error reads this thread's queue
    const int n = SSL_read(ssl_, f.buf, sizeof f.buf);
    if (n > 0) {
      f.to_plain.assign(f.buf, static_cast<size_t>(n));
      f.moved = true;
    } else if (!TlsWaits(n, &f.tls_events)) {
      // The peer closed (close_notify, or EOF) or the session broke: the Loop reads EOF.
      f.tls_broken = SSL_get_error(ssl_, n) != SSL_ERROR_ZERO_RETURN;
      f.tls_ended = f.moved = true;
      ::shutdown(relay_end_, SHUT_WR);
    }
  }
  if (f.to_plain.empty()) return;
  const ssize_t n = ::send(relay_end_, f.to_plain.data(), f.to_plain.size(), MSG_NOSIGNAL);
  if (n > 0) {
    f.to_plain.erase(0, static_cast<size_t>(n));
    f.moved = true;
  } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
    f.plain_events |= POLLOUT;
  } else {
    f.plain_gone = true;
  }
}

// The Loop's bytes in, out as TLS records; the Loop's EOF as close_notify once they went out.
void TlsRelay::PlainToTls(Flow& f) {
  if (!f.plain_ended && f.to_tls.empty()) {
    const ssize_t n = ::recv(relay_end_, f.buf, sizeof f.buf, 0);
    if (n > 0) {
      f.to_tls.assign(f.buf, static_cast<size_t>(n));
      f.moved = true;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      f.plain_events |= POLLIN;
    } else {
      f.plain_ended = f.notify_pending = f.moved = true;
    }
  }
  if (!f.to_tls.empty() && f.tls_ended) {
    f.to_tls.clear();  // nobody to send it to; the plain side is read on until it ends
    f.moved = true;
  } else if (!f.to_tls.empty()) {
    ERR_clear_error();
    const int n = SSL_write(ssl_, f.to_tls.data(), static_cast<int>(f.to_tls.size()));
    if (n > 0) {
      f.to_tls.erase(0, static_cast<size_t>(n));
      f.moved = true;
    } else if (!TlsWaits(n, &f.tls_events)) {
      f.tls_ended = f.tls_broken = f.moved = true;
      f.to_tls.clear();
      ::shutdown(relay_end_, SHUT_WR);
    }
  }
  if (f.notify_pending && f.to_tls.empty() && !f.tls_broken) {
    // Also after the peer's close_notify: the peer's relay waits for ours.
    ERR_clear_error();
    const int n = SSL_shutdown(ssl_);
    f.notify_pending = n < 0 && TlsWaits(n, &f.tls_events);
    f.moved = f.moved || !f.notify_pending;
  }
}

// One thread, non-blocking both ways: TLS records in to the plain end, the plain end's bytes out as
// records. It polls only when neither side moved. An SSL_write that must be retried is retried with
// the same bytes (OpenSSL requires it): `to_tls` is not touched until it is written whole.
// Half-closes pass through, as WebSocket closes need them (each side's teardown reads until the
// other's end): the plain end's EOF becomes TLS's close_notify once what it wrote went out (sent
// also after the peer's, which the relay at the other end waits for), and TLS's end the plain
// end's EOF (what the plain end writes after that is dropped: WebSocket sends nothing after its
// close). Once one side ended, the other has kDrainTimeout to end too.
void TlsRelay::Run() {
  // A peer gone while a record is written raises SIGPIPE in the writing thread (OpenSSL writes
  // with write(2)): blocked here, it becomes EPIPE, whatever the process does with the signal.
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
  auto flow = std::make_unique<Flow>();
  Flow& f = *flow;
  std::optional<std::chrono::steady_clock::time_point> first_end;
  for (;;) {
    if (first_end && std::chrono::steady_clock::now() >= *first_end + kDrainTimeout) break;
    f.tls_events = f.plain_events = 0;
    f.moved = false;
    TlsToPlain(f);
    if (f.plain_gone) break;
    PlainToTls(f);
    if (f.plain_ended && f.tls_ended && f.to_plain.empty()) break;
    if ((f.plain_ended || f.tls_ended) && !first_end) first_end = std::chrono::steady_clock::now();
    if (f.moved) continue;
    // A side nothing is asked of is left out: a closed socket reports POLLHUP whatever was asked,
    // and would wake the poll at once, again and again.
    pollfd fds[2] = {{f.tls_events != 0 ? fd_ : -1, f.tls_events, 0},
                     {f.plain_events != 0 ? relay_end_ : -1, f.plain_events, 0}};
    int wait_ms = -1;
    if (first_end) {
      const auto left = *first_end + kDrainTimeout - std::chrono::steady_clock::now();
      wait_ms = static_cast<int>(std::max<int64_t>(0, std::chrono::ceil<std::chrono::milliseconds>(left).count()));
    }
    const int ready = ::poll(fds, 2, wait_ms);
    if (ready == 0 || (ready < 0 && errno != EINTR)) break;
  }
  // Ended: both sides learn it now (the descriptors are closed by the destructor, so that their
  // numbers are not reused while another thread may still name them).
  ::shutdown(relay_end_, SHUT_RDWR);
  if (owned_) {
    ::shutdown(fd_, SHUT_RDWR);
  } else {
    ::fcntl(fd_, F_SETFL, fd_flags_);  // the caller's connection as it was
  }
  ERR_clear_error();  // this thread's queue: OpenSSL's errors are per thread
}

Result<std::unique_ptr<TlsRelay>> DialTls(const std::string& host, const std::string& port, const std::string& ca_file,
                                          std::chrono::milliseconds timeout) {
  auto dialled = DialTcp(host, port, timeout);
  if (!dialled.ok()) return Status::Unavailable("wss://" + dialled.status().message());
  const int fd = *dialled;
  const std::string where = fmt::format("wss://{}:{}", host, port);
  auto fail = [&](SSL* ssl, const std::string& why) -> Status {
    if (ssl != nullptr) SSL_free(ssl);
    ::close(fd);
    return Status::Unavailable(fmt::format("{}: {}", where, why));
  };
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  if (ctx == nullptr) return fail(nullptr, OpenSslErrors());
  const bool trusted = ca_file.empty() ? SSL_CTX_set_default_verify_paths(ctx) == 1
                                       : SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) == 1;
  const bool modern = SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1;
  SSL* ssl = trusted && modern ? SSL_new(ctx) : nullptr;
  SSL_CTX_free(ctx);  // the session holds its own reference
  if (!trusted) return fail(nullptr, fmt::format("CA certificates {}: {}", ca_file, OpenSslErrors()));
  if (ssl == nullptr) return fail(nullptr, OpenSslErrors());
  SSL_set_verify(ssl, SSL_VERIFY_PEER, nullptr);
  // Whom the certificate must name: the IP address dialled, or the host name (also sent as SNI).
  // Failing to say so would verify the chain alone: refused instead.
  const bool named = IsIpAddress(host)
                         ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1
                         : SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
  if (!named || SSL_set_fd(ssl, fd) != 1) return fail(ssl, "setting up TLS: " + OpenSslErrors());
  if (SSL_connect(ssl) != 1) {
    const long verified = SSL_get_verify_result(ssl);
    const std::string why = verified != X509_V_OK
                                ? fmt::format("the server's certificate: {}", X509_verify_cert_error_string(verified))
                                : OpenSslErrors();
    return fail(ssl, why);
  }
  SetSocketTimeouts(fd, std::chrono::milliseconds(0));
  auto relay = TlsRelay::Start(ssl, fd, /*owned=*/true);
  if (!relay.ok()) return fail(ssl, relay.status().message());
  return relay;
}

}  // namespace hpc::ws
