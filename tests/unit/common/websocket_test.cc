// WebSockets on real loopback sockets: a plain TCP listener here reads an upgrade request as an
// HTTP server would, and hands the connection to a Loop (Accept); a client Loop dials it.
#include "common/websocket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <thread>

namespace hpc::ws {
namespace {

// A listener on a loopback port that accepts one connection and reads its request's head.
class Listener {
 public:
  Listener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    EXPECT_EQ(::listen(fd_, 4), 0);
    socklen_t len = sizeof a;
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd_); }
  std::string port() const { return std::to_string(port_); }
  // Accepts, reads up to the blank line, and parses the request's target and headers.
  int AcceptRequest(UpgradeRequest* out) {
    const int c = ::accept(fd_, nullptr, nullptr);
    std::string head;
    char ch;
    while (head.find("\r\n\r\n") == std::string::npos && ::read(c, &ch, 1) == 1) head += ch;
    size_t line_end = head.find("\r\n");
    const std::string first = head.substr(0, line_end);
    out->target = first.substr(first.find(' ') + 1, first.rfind(' ') - first.find(' ') - 1);
    for (size_t pos = line_end + 2; pos < head.size();) {
      const size_t end = head.find("\r\n", pos);
      const std::string line = head.substr(pos, end - pos);
      if (line.empty()) break;
      const size_t colon = line.find(':');
      out->headers.emplace_back(line.substr(0, colon), line.substr(colon + 2));
      pos = end + 2;
    }
    return c;
  }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(WebSocketTest, MessagesPassBothWaysWithTheirKindAndTheCloseCarriesItsCodeAndReason) {
  Listener listener;
  std::vector<std::pair<std::string, bool>> server_got;
  CloseInfo server_closed;
  std::string target;
  std::thread server([&] {
    UpgradeRequest req;
    const int fd = listener.AcceptRequest(&req);
    target = req.target;
    Loop loop;
    auto holder = std::make_shared<std::shared_ptr<Connection>>();
    auto c = loop.Accept(
        fd, req,
        [&, holder](std::string data, bool binary) {
          server_got.emplace_back(data, binary);
          (*holder)->Send("echo:" + data, binary);
        },
        [&](const CloseInfo& info) { server_closed = info; });
    ::close(fd);  // the Loop works on its own duplicate
    ASSERT_TRUE(c.ok()) << c.status().message();
    *holder = *c;
    loop.Run();
  });
  Loop loop;
  std::vector<std::pair<std::string, bool>> got;
  std::shared_ptr<Connection> conn;
  CloseInfo closed;
  auto c = loop.Connect(
      "127.0.0.1", listener.port(), "/socket?x=1", {{"X-Extra", "yes"}}, std::chrono::seconds(10),
      [&](std::string data, bool binary) {
        got.emplace_back(std::move(data), binary);
        if (got.size() == 2) conn->Close(4000, "bye");
      },
      [&](const CloseInfo& info) { closed = info; });
  ASSERT_TRUE(c.ok()) << c.status().message();
  conn = *c;
  conn->Send("hello", false);
  conn->Send(std::string("\x00\xfe", 2), true);
  loop.Run();
  server.join();
  EXPECT_EQ(target, "/socket?x=1");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], std::make_pair(std::string("echo:hello"), false));
  EXPECT_EQ(got[1], std::make_pair(std::string("echo:\x00\xfe", 7), true));
  EXPECT_EQ(server_closed.code, 4000);
  EXPECT_EQ(server_closed.reason, "bye");
  EXPECT_EQ(closed.code, 4000);
  conn->Send("after", false);  // the connection and its Loop are gone: nothing happens
}

TEST(WebSocketTest, ARequestThatIsNoUpgradeIsRefusedWithNothingWritten) {
  Listener listener;
  std::thread client([&] {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(std::stoi(listener.port())));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const std::string req = "GET /x HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
    ASSERT_EQ(::write(fd, req.data(), req.size()), static_cast<ssize_t>(req.size()));
    ::shutdown(fd, SHUT_WR);
    char buf[64];
    EXPECT_EQ(::read(fd, buf, sizeof buf), 0) << "nothing was answered on the connection";
    ::close(fd);
  });
  UpgradeRequest req;
  const int fd = listener.AcceptRequest(&req);
  Loop loop;
  auto c = loop.Accept(fd, req, nullptr, nullptr);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("Sec-WebSocket-Version"), std::string::npos) << c.status().message();
  UpgradeRequest plain{"/x", {{"Host", "h"}}};
  EXPECT_FALSE(loop.Accept(fd, plain, nullptr, nullptr).ok());
  ::close(fd);
  client.join();
}

TEST(WebSocketTest, CloseAtClosesWithItsCodeAndARefusedHandshakeSaysSo) {
  Listener listener;
  std::thread server([&] {
    UpgradeRequest req;
    const int fd = listener.AcceptRequest(&req);
    Loop loop;
    auto c = loop.Accept(fd, req, nullptr, nullptr);
    ::close(fd);
    ASSERT_TRUE(c.ok());
    (*c)->CloseAt(std::chrono::system_clock::now() + std::chrono::milliseconds(100), kTokenExpired, "expired");
    loop.Run();
  });
  Loop loop;
  CloseInfo closed;
  auto c = loop.Connect("127.0.0.1", listener.port(), "/", {}, std::chrono::seconds(10), nullptr,
                        [&](const CloseInfo& info) { closed = info; });
  ASSERT_TRUE(c.ok());
  loop.Run();
  server.join();
  EXPECT_EQ(closed.code, kTokenExpired);
  EXPECT_EQ(closed.reason, "expired");

  std::thread refusing([&] {
    UpgradeRequest req;
    const int fd = listener.AcceptRequest(&req);
    const std::string answer = "HTTP/1.1 403 Forbidden\r\nContent-Length: 6\r\nConnection: close\r\n\r\nno way";
    EXPECT_EQ(::write(fd, answer.data(), answer.size()), static_cast<ssize_t>(answer.size()));
    ::close(fd);
  });
  auto refused = loop.Connect("127.0.0.1", listener.port(), "/", {}, std::chrono::seconds(10), nullptr, nullptr);
  refusing.join();
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("refused the upgrade"), std::string::npos) << refused.status().message();
}

TEST(WebSocketTest, OnlyCodesACloseFrameMayCarryArePassedOn) {
  EXPECT_EQ(SendableCloseCode(1000), 1000);
  EXPECT_EQ(SendableCloseCode(4401), 4401);
  EXPECT_EQ(SendableCloseCode(1006), kServerError);
  EXPECT_EQ(SendableCloseCode(1005), kServerError);
  EXPECT_EQ(SendableCloseCode(0), kServerError);
  EXPECT_EQ(SendableCloseCode(5000), kServerError);
}

TEST(WebSocketTest, AServerUrlGivesWhereItsSocketsAreDialledAndWhetherOverTls) {
  auto plain = EndpointOf("http://cp.example:8080/api/v1");
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->host, "cp.example");
  EXPECT_EQ(plain->port, "8080");
  EXPECT_FALSE(plain->tls);
  auto tls = EndpointOf("https://cp.example", "/etc/hpcplane/ca.pem");
  ASSERT_TRUE(tls.ok());
  EXPECT_EQ(tls->port, "443");
  EXPECT_TRUE(tls->tls);
  EXPECT_EQ(tls->ca_file, "/etc/hpcplane/ca.pem");
  auto v6 = EndpointOf("https://[::1]:8443/");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->port, "8443");
  EXPECT_EQ(EndpointOf("http://cp.example")->port, "80");
  EXPECT_EQ(EndpointOf("http://cp.example")->ca_file, "") << "a CA file means nothing without TLS";
  EXPECT_FALSE(EndpointOf("ftp://cp.example").ok());
  EXPECT_FALSE(EndpointOf("https://[::1").ok());
}

}  // namespace
}  // namespace hpc::ws
