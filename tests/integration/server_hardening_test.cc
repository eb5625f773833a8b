// The control plane's REST server against hostile input, as a real `hpcplane server` process:
// no request crashes it or yields a 500, every error is JSON naming what was wrong, bodies are
// bounded, numbers are parsed strictly, and a bad --listen is refused before anything is made.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

// One raw HTTP exchange, so the request line goes out exactly as written.
std::string RawRequest(int port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string out;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    (void)::write(fd, request.data(), request.size());
    char buf[4096];
    ssize_t n;
    while ((n = ::read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

// The JSON error of a response, or null when the body is not one.
json ErrorOf(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  return j.is_object() && j.contains("error") ? j["error"] : json();
}

class ServerHardening : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *files::MakeTempDir("hpcplane-srv");
    port_ = FreeLoopbackPort();
    server_ = std::make_unique<Background>(
        std::vector<std::string>{HPCPLANE_BIN, "--state-dir", dir_, "server", "--listen",
                                 "127.0.0.1:" + std::to_string(port_)},
        dir_ + "/server.log");
    ASSERT_TRUE(WaitFor([&] { return httplib::Client(Url()).Get("/api/v1/flags") != nullptr; }, 20s))
        << server_->Log();
    token_ = Trim(files::Read(dir_ + "/controlplane/admin.token").value_or(""));
  }
  void TearDown() override {
    server_.reset();
    (void)files::RemoveAll(dir_);
  }
  std::string Url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  httplib::Client Admin() const {
    httplib::Client c(Url());
    c.set_bearer_token_auth(token_);
    return c;
  }
  bool Alive() { return httplib::Client(Url()).Get("/api/v1/flags") != nullptr; }

  std::string dir_, token_;
  int port_ = 0;
  std::unique_ptr<Background> server_;
};

// Guards the abort on a path that decodes to invalid UTF-8, with no token at all.
TEST_F(ServerHardening, InvalidUtf8PathsAnswer404AndTheServerLives) {
  for (const std::string path : {"/%FF", "/api/v1/flags%FF", "/%C3%28/x"}) {
    std::string r = RawRequest(port_, "GET " + path + " HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(r.rfind("HTTP/1.1 404", 0), 0u) << path << ": " << r;
    EXPECT_NE(r.find("\"code\":404"), std::string::npos) << r;
    ASSERT_TRUE(Alive()) << "after " << path << "\n" << server_->Log();
  }
}

TEST_F(ServerHardening, OversizedBodiesAre413UnreadAndErrorsOfTheHttpLayerAreJson) {
  auto cli = Admin();
  std::string big(5 << 20, 'x');
  auto r = cli.Put("/api/v1/flags/EnableHPCJobs", big, "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  EXPECT_EQ(ErrorOf(r->body)["field"], "body") << r->body;
  // A malformed request line.
  std::string bad = RawRequest(port_, "NONSENSE\r\n\r\n");
  EXPECT_EQ(bad.rfind("HTTP/1.1 400", 0), 0u) << bad;
  EXPECT_NE(bad.find("\"code\":400"), std::string::npos) << bad;
  EXPECT_TRUE(Alive());
}

// Guards the 500s (with the exception text in a header) for fields of the wrong type.
TEST_F(ServerHardening, FieldsOfTheWrongTypeAre400WithoutInternals) {
  auto cli = Admin();
  auto r = cli.Post("/api/v1/tokens", R"({"subject": 7, "role": "user"})", "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 400) << r->body;
  EXPECT_FALSE(r->has_header("EXCEPTION_WHAT"));
  EXPECT_EQ(ErrorOf(r->body)["code"], 400);
  auto rep = cli.Post("/api/v1/dataplanes/dp1/report", R"({"state": ["Healthy"]})", "application/json");
  ASSERT_TRUE(rep);
  EXPECT_LT(rep->status, 500) << rep->body;
  EXPECT_TRUE(Alive());
}

TEST_F(ServerHardening, NumbersInQueriesAreParsedStrictly) {
  auto cli = Admin();
  struct Case {
    std::string query, field;
  };
  for (const Case& c : {Case{"limit=4294967297", "limit"}, Case{"limit=0", "limit"}, Case{"limit=+5", "limit"},
                        Case{"from=99999999999999999999", "from"}, Case{"to=-1", "to"}, Case{"from=%FF", "from"}}) {
    auto r = cli.Get("/api/v1/projects/astro/jobs?" + c.query);
    ASSERT_TRUE(r) << c.query;
    EXPECT_EQ(r->status, 400) << c.query << ": " << r->body;
    EXPECT_EQ(ErrorOf(r->body)["field"], c.field) << c.query << ": " << r->body;
  }
  auto ok = cli.Get("/api/v1/projects/astro/jobs?limit=5&from=0");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto job = cli.Get("/api/v1/projects/astro/jobs/dp1/c1/5?submitTime=abc");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 400) << job->body;
  EXPECT_EQ(ErrorOf(job->body)["field"], "submitTime");
}

TEST(ServerListen, AnInvalidPortIsRefusedBeforeAnythingIsCreated) {
  auto dir = *files::MakeTempDir("hpcplane-srv");
  for (const std::string listen : {"127.0.0.1:abc", "127.0.0.1:70000", "127.0.0.1", "127.0.0.1:80x"}) {
    auto r = RunProcess({HPCPLANE_BIN, "--state-dir", dir, "server", "--listen", listen});
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->exit_code, 0) << listen;
    EXPECT_NE(r->err.find("--listen"), std::string::npos) << listen << ": " << r->err;
  }
  EXPECT_FALSE(files::Exists(dir + "/controlplane"));
  (void)files::RemoveAll(dir);
}

}  // namespace
}  // namespace hpc::it
