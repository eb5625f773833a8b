// The TLS relay against a real TLS server here (OpenSSL, a self-signed certificate made with the
// openssl command): what the plain end writes arrives, the plain end's close becomes the server's
// close_notify, and a server that then says nothing holds the relay no longer than its drain
// timeout, without spinning.
#include "common/tls_relay.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <string>
#include <thread>

#include "common/files.h"
#include "common/subprocess.h"

namespace hpc::ws {
namespace {

double ProcessCpuSeconds() {
  timespec t{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) / 1e9;
}

TEST(TlsRelayTest, ThePlainEndsCloseReachesTheServerAndASilentServerHoldsItOnlyUntilTheDrainTimeout) {
  ::signal(SIGPIPE, SIG_IGN);
  auto dir = files::MakeTempDir("hpcplane-tls-relay");
  ASSERT_TRUE(dir.ok());
  const std::string cert = *dir + "/cert.pem", key = *dir + "/key.pem";
  auto made = RunProcess({"openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                          "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                          "-keyout", key, "-out", cert});
  ASSERT_TRUE(made.ok() && made->exit_code == 0);

  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(listener, 1), 0);
  socklen_t len = sizeof a;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));

  // The server: reads what comes until the client's close_notify, then stays silent (neither its
  // own close_notify nor a TCP close) until told to go.
  std::string received;
  bool got_close_notify = false;
  std::atomic<bool> release{false};
  std::thread server([&] {
    const int fd = ::accept(listener, nullptr, nullptr);
    SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
    SSL_CTX_use_certificate_file(ctx, cert.c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM);
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, fd);
    if (SSL_accept(ssl) == 1) {
      char buf[256];
      int n = 0;
      while ((n = SSL_read(ssl, buf, sizeof buf)) > 0) received.append(buf, static_cast<size_t>(n));
      got_close_notify = SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN;
    }
    while (!release) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    SSL_free(ssl);
    SSL_CTX_free(ctx);
    ::close(fd);
  });

  auto relay = DialTls("127.0.0.1", port, cert, std::chrono::seconds(10));
  ASSERT_TRUE(relay.ok()) << relay.status().message();
  const int plain = (*relay)->TakePlainEnd();
  ASSERT_EQ(::write(plain, "hello", 5), 5);
  ::close(plain);
  const double cpu_before = ProcessCpuSeconds();
  const auto closed_at = std::chrono::steady_clock::now();
  relay->reset();  // waits for the relay's end
  const auto held = std::chrono::steady_clock::now() - closed_at;
  const double cpu = ProcessCpuSeconds() - cpu_before;
  release = true;
  server.join();
  ::close(listener);
  EXPECT_EQ(received, "hello");
  EXPECT_TRUE(got_close_notify) << "the plain end's close reached the server as close_notify";
  EXPECT_GE(held, TlsRelay::kDrainTimeout - std::chrono::milliseconds(100)) << "it waited for the server's end";
  EXPECT_LT(held, TlsRelay::kDrainTimeout + std::chrono::seconds(2)) << "and no longer than its drain timeout";
  EXPECT_LT(cpu, 0.5) << "waiting costs no CPU (a closed plain end must not wake the relay's poll again and again)";
  ASSERT_TRUE(files::RemoveAll(*dir).ok());
}

}  // namespace
}  // namespace hpc::ws
