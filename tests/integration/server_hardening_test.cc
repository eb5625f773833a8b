// The control plane's REST server against hostile input, as a real `hpcplane server` process:
// no request crashes it or yields a 500, every error is JSON naming what was wrong, bodies are
// bounded, numbers are parsed strictly, and a bad --listen is refused before anything is made.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <thread>

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

// A raw connection to the server, for clients that misbehave on purpose.
class RawConnection {
 public:
  explicit RawConnection(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<uint16_t>(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~RawConnection() { ::close(fd_); }
  bool connected() const { return connected_; }
  bool Send(const std::string& s) {
    return ::send(fd_, s.data(), s.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(s.size());
  }
  // What the server sent until it closed, or until `timeout` passed.
  std::string ReadUntilClosed(std::chrono::milliseconds timeout) {
    std::string out;
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buf[4096];
      ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) break;
      out.append(buf, static_cast<size_t>(n));
    }
    return out;
  }

 private:
  int fd_ = -1;
  bool connected_ = false;
};

class ServerHardening : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }
  void Start(const std::vector<std::string>& extra) {
    dir_ = *files::MakeTempDir("hpcplane-srv");
    port_ = FreeLoopbackPort();
    std::vector<std::string> argv = {HPCPLANE_BIN,
                                     "--state-dir",
                                     dir_,
                                     "server",
                                     "--listen",
                                     "127.0.0.1:" + std::to_string(port_),
                                     "--max-connections-per-client",
                                     "20",
                                     "--request-deadline",
                                     "3"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    server_ = std::make_unique<Background>(argv, dir_ + "/server.log");
    ASSERT_TRUE(WaitFor([&] { return httplib::Client(Url()).Get("/api/v1/flags") != nullptr; }, 20s)) << server_->Log();
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

// A hostile value (ESC, BEL, NUL, a newline) in a path, a query or a body field is refused, and
// neither the raw answer nor the message a client decodes from it holds any of those bytes: a
// client that prints the error cannot have its terminal rewritten.
TEST_F(ServerHardening, ControlCharactersInRequestsNeverComeBackRawInAnswers) {
  const std::string evil = std::string("a\x1b]0;pwned\x07") + "b" + std::string(1, '\0') + "c\nd";
  const std::string evil_json = json(evil).dump();  // "a\u001b]0;pwned\u0007b\u0000c\nd"
  const std::string evil_url = "a%1B%5D0%3Bpwned%07b%00c%0Ad";
  struct Case {
    std::string method, path, body;
  };
  const std::vector<Case> cases = {
      {"POST", "/api/v1/tokens", R"({"subject": )" + evil_json + R"(, "role": "user", "projects": ["astro"]})"},
      {"POST", "/api/v1/tokens", R"({"subject": "ann", "role": )" + evil_json + "}"},
      {"POST", "/api/v1/tokens", R"({"subject": "ann", "role": "user", "projects": [)" + evil_json + "]}"},
      {"POST", "/api/v1/projects/astro/jobs",
       R"({"dataPlane": "dp1", "script": "#!/bin/sh\ntrue", "partition": )" + evil_json + "}"},
      {"POST", "/api/v1/projects/astro/jobs", R"({"dataPlane": )" + evil_json + R"(, "script": "#!/bin/sh\ntrue"})"},
      {"POST", "/api/v1/projects/astro/jobs", R"({)" + evil_json + R"(: 1})"},
      {"PUT", "/api/v1/flags/EnableHPCJobs", evil_json},
      {"GET", "/api/v1/projects/astro/jobs?user=" + evil_url, ""},
      {"GET", "/api/v1/projects/astro/jobs?limit=" + evil_url, ""},
      {"GET", "/api/v1/" + evil_url, ""},
      {"POST", "/api/v1/session", R"({"token": )" + evil_json + "}"},
  };
  for (const auto& c : cases) {
    const std::string what = c.method + " " + c.path + " " + c.body;
    std::string raw =
        RawRequest(port_, c.method + " " + c.path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token_ +
                              "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(c.body.size()) +
                              "\r\nConnection: close\r\n\r\n" + c.body);
    ASSERT_FALSE(raw.empty()) << what;
    const int status = std::atoi(raw.substr(9, 3).c_str());
    EXPECT_GE(status, 400) << what << ": " << raw;
    EXPECT_LT(status, 500) << what << ": " << raw;
    for (unsigned char b : raw) {
      EXPECT_FALSE(b == 0x1b || b == 0x07 || b == 0) << what << ": byte " << int(b) << " in the answer " << raw;
    }
    const size_t body_at = raw.find("\r\n\r\n");
    ASSERT_NE(body_at, std::string::npos) << raw;
    json err = ErrorOf(raw.substr(body_at + 4));
    ASSERT_TRUE(err.is_object()) << what << ": " << raw;
    for (const auto& [key, value] : err.items()) {
      if (!value.is_string()) continue;
      for (unsigned char b : value.get<std::string>()) {
        EXPECT_FALSE(b < 0x20 || b == 0x7f) << what << ": byte " << int(b) << " in error." << key << ": " << value;
      }
    }
  }
  EXPECT_TRUE(Alive()) << server_->Log();
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
                        Case{"from=99999999999999999999", "from"}, Case{"to=-1", "to"}, Case{"from=%FF", "from"},
                        Case{"sort=size", "sort"}, Case{"sort=start&cursor=1000.1.dp1.c1", "cursor"},
                        Case{"cursor=s1.1000.1.dp1.c1", "cursor"}, Case{"cursor=q1.1000.1.dp1.c1", "cursor"}}) {
    auto r = cli.Get("/api/v1/projects/astro/jobs?" + c.query);
    ASSERT_TRUE(r) << c.query;
    EXPECT_EQ(r->status, 400) << c.query << ": " << r->body;
    EXPECT_EQ(ErrorOf(r->body)["field"], c.field) << c.query << ": " << r->body;
  }
  auto ok = cli.Get("/api/v1/projects/astro/jobs?limit=5&from=0&sort=end&cursor=e10.1000.1.dp1.c1");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  auto job = cli.Get("/api/v1/projects/astro/jobs/dp1/c1/5?submitTime=abc");
  ASSERT_TRUE(job);
  EXPECT_EQ(job->status, 400) << job->body;
  EXPECT_EQ(ErrorOf(job->body)["field"], "submitTime");
}

// Guards the starved worker pool: 10 connections sending one header byte every 3 s held all 8
// threads and a normal request waited 19 s.
TEST_F(ServerHardening, SlowHeaderClientsNeitherStarveOthersNorStayPastTheDeadline) {
  std::vector<std::unique_ptr<RawConnection>> slow;
  for (int i = 0; i < 15; ++i) {
    slow.push_back(std::make_unique<RawConnection>(port_));
    ASSERT_TRUE(slow.back()->connected());
    ASSERT_TRUE(slow.back()->Send("G"));
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    const std::string rest = "ET /api/v1/flags HTTP/1.1\r\nHost: x\r\nX-Slow: ";
    for (size_t i = 0; !stop && i < 100; ++i) {
      for (auto& c : slow) (void)c->Send(std::string(1, i < rest.size() ? rest[i] : 'a'));
      for (int t = 0; t < 5 && !stop; ++t) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  });
  // Meanwhile a normal client is answered at once, many times over.
  auto cli = Admin();
  for (int i = 0; i < 20; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = cli.Get("/api/v1/flags");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  }
  // Past the 3 s request deadline the slow ones are answered 408 and closed.
  std::string answer = slow[0]->ReadUntilClosed(10s);
  stop = true;
  trickle.join();
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  EXPECT_NE(answer.find("\"code\":408"), std::string::npos) << answer;
  EXPECT_NE(server_->Log().find("no whole request within 3 s"), std::string::npos);
}

TEST_F(ServerHardening, ConnectionsBeyondThePerClientLimitAreAnswered429) {
  std::vector<std::unique_ptr<RawConnection>> idle;
  for (int i = 0; i < 25; ++i) {
    idle.push_back(std::make_unique<RawConnection>(port_));
    ASSERT_TRUE(idle.back()->connected());
  }
  int refused = 0;
  for (auto& c : idle) {
    std::string a = c->ReadUntilClosed(5s);
    if (a.rfind("HTTP/1.1 429", 0) == 0) {
      ++refused;
      EXPECT_NE(a.find("too many connections from 127.0.0.1 (limit 20)"), std::string::npos) << a;
    }
  }
  EXPECT_EQ(refused, 5) << server_->Log();
  idle.clear();
  EXPECT_TRUE(Alive());
}

TEST_F(ServerHardening, AWrongMethodOnARealPathIs405WithAllow) {
  auto cli = Admin();
  auto r = cli.Delete("/api/v1/flags");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405) << r->body;
  EXPECT_EQ(r->get_header_value("Allow"), "GET");
  EXPECT_EQ(ErrorOf(r->body)["code"], 405);
  auto t = cli.Put("/api/v1/tokens", "{}", "application/json");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->status, 405);
  EXPECT_EQ(t->get_header_value("Allow"), "POST, GET");
  auto none = cli.Delete("/api/v1/nothing-here");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
}

// Methods no route has at all (cpp-httplib answers them a bare 400 by itself), and a PATCH with
// no body: each 405 with the path's methods, as any other wrong method.
TEST_F(ServerHardening, MethodsNoRouteHasAre405WithAllowToo) {
  struct Case {
    std::string method, path, allow;
  };
  for (const Case& c : {Case{"TRACE", "/api/v1/flags", "GET"}, Case{"OPTIONS", "/api/v1/tokens", "POST, GET"},
                        Case{"PATCH", "/api/v1/flags", "GET"}}) {
    std::string a = RawRequest(port_, c.method + " " + c.path + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " +
                                          token_ + "\r\nConnection: close\r\n\r\n");
    EXPECT_EQ(a.rfind("HTTP/1.1 405", 0), 0u) << c.method << " " << c.path << ": " << a;
    EXPECT_NE(a.find("Allow: " + c.allow + "\r\n"), std::string::npos) << c.method << " " << c.path << ": " << a;
    EXPECT_NE(a.find(c.method + " is not served for " + c.path), std::string::npos) << a;
  }
  std::string nowhere =
      RawRequest(port_, "TRACE /api/v1/nothing-here HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_EQ(nowhere.rfind("HTTP/1.1 404", 0), 0u) << nowhere;
  EXPECT_TRUE(Alive());
}

// A POST without Content-Length (or Transfer-Encoding) has no body (RFC 9112, 6.3): it is
// answered at once, not after the server's 5 s read timeout waiting for a body to end.
TEST_F(ServerHardening, ABodilessPostWithoutContentLengthIsAnsweredAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  std::string a = RawRequest(port_, "POST /api/v1/tokens HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token_ +
                                        "\r\nConnection: close\r\n\r\n");
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(a.rfind("HTTP/1.1 400", 0), 0u) << a;
  EXPECT_NE(a.find("request body is not valid JSON"), std::string::npos) << a;
  EXPECT_LT(took, 1s) << std::chrono::duration_cast<std::chrono::milliseconds>(took).count() << " ms";
  // A DELETE without one, as curl -X DELETE sends it, too.
  const auto deleted = std::chrono::steady_clock::now();
  std::string d = RawRequest(port_,
                             "DELETE /api/v1/tokens/0123456789abcdef HTTP/1.1\r\nHost: x\r\n"
                             "Authorization: Bearer " +
                                 token_ + "\r\nConnection: close\r\n\r\n");
  EXPECT_LT(std::chrono::steady_clock::now() - deleted, 1s) << d;
  EXPECT_EQ(d.rfind("HTTP/1.1 404", 0), 0u) << d;
}

TEST_F(ServerHardening, TokensExpireCanBeListedAndRevokedAndEveryChangeIsAudited) {
  auto admin = Admin();
  auto made = admin.Post("/api/v1/tokens", R"({"subject":"ann","role":"user","projects":["astro"],"ttl":"3s"})",
                         "application/json");
  ASSERT_TRUE(made);
  ASSERT_EQ(made->status, 201) << made->body;
  json m = json::parse(made->body);
  const std::string token = m["token"], id = m["id"];
  EXPECT_TRUE(m["expiresAt"].is_number());
  httplib::Client ann(Url());
  ann.set_bearer_token_auth(token);
  auto ok = ann.Get("/api/v1/projects/astro/jobs");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
  // Listed without the secret or its digest, with its last use.
  auto listed = admin.Get("/api/v1/tokens");
  ASSERT_TRUE(listed);
  EXPECT_EQ(listed->body.find(token), std::string::npos);
  json entry;
  const json tokens = json::parse(listed->body)["tokens"];
  for (const auto& t : tokens) {
    if (t["id"] == id) entry = t;
  }
  ASSERT_TRUE(entry.is_object()) << id << " " << made->body << " " << listed->body;
  EXPECT_EQ(entry["subject"], "ann");
  EXPECT_EQ(entry["createdBy"], "admin");
  EXPECT_TRUE(entry["lastUsed"].is_number()) << entry;
  EXPECT_FALSE(entry.contains("token"));
  // It expires.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = ann.Get("/api/v1/projects/astro/jobs");
        return r && r->status == 401 && ErrorOf(r->body)["message"] == "token " + id + " expired";
      },
      10s));
  // Another one is revoked by its id.
  auto second = json::parse(
      admin.Post("/api/v1/tokens", R"({"subject":"ann","role":"user","projects":["astro"]})", "application/json")
          ->body);
  ann.set_bearer_token_auth(second["token"].get<std::string>());
  EXPECT_EQ(ann.Get("/api/v1/projects/astro/jobs")->status, 200);
  auto gone = admin.Delete("/api/v1/tokens/" + second["id"].get<std::string>());
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->status, 200) << gone->body;
  auto after = ann.Get("/api/v1/projects/astro/jobs");
  EXPECT_EQ(after->status, 401);
  EXPECT_EQ(ErrorOf(after->body)["message"], "token " + second["id"].get<std::string>() + " was revoked");
  EXPECT_EQ(admin.Delete("/api/v1/tokens/ffffffffffffffff")->status, 404);
  auto bad_ttl = admin.Post("/api/v1/tokens", R"({"subject":"ann","role":"user","ttl":"forever"})", "application/json");
  EXPECT_EQ(bad_ttl->status, 400);
  EXPECT_EQ(ErrorOf(bad_ttl->body)["field"], "ttl");
  ASSERT_EQ(admin.Put("/api/v1/flags/EnableHPCJobs", R"({"value":true})", "application/json")->status, 200);
  // The audit log has who did what, from where.
  auto audit = admin.Get("/api/v1/audit?limit=50");
  ASSERT_TRUE(audit);
  ASSERT_EQ(audit->status, 200) << audit->body;
  std::map<std::string, int> actions;
  const json entries = json::parse(audit->body)["entries"];
  for (const auto& e : entries) {
    ++actions[e["action"].get<std::string>()];
    EXPECT_EQ(e["remote"], "127.0.0.1");
  }
  EXPECT_EQ(actions["token.create"], 2);
  EXPECT_EQ(actions["token.revoke"], 1);
  EXPECT_EQ(actions["flag.set"], 1);
  EXPECT_GE(actions["signin.failed"], 2);  // the expired and the revoked token
  EXPECT_EQ(audit->body.find(token), std::string::npos);
  // Users may not read it.
  httplib::Client user(Url());
  user.set_bearer_token_auth(
      json::parse(admin.Post("/api/v1/tokens", R"({"subject":"ben","role":"user"})", "application/json")->body)["token"]
          .get<std::string>());
  EXPECT_EQ(user.Get("/api/v1/audit")->status, 403);
}

// Templates: only admins write them, only members read them, every refusal names its field,
// and a submission from a template is checked as if its script and options were sent.
TEST_F(ServerHardening, JobTemplatesAreAdminsToWriteMembersToReadAndCheckedLikeSubmissions) {
  auto admin = Admin();
  auto token_of = [&](const std::string& subject, const std::string& project) {
    auto r = admin.Post("/api/v1/tokens", json{{"subject", subject}, {"role", "user"}, {"projects", {project}}}.dump(),
                        "application/json");
    EXPECT_EQ(r->status, 201) << r->body;
    return json::parse(r->body)["token"].get<std::string>();
  };
  httplib::Client ann(Url()), eve(Url());
  ann.set_bearer_token_auth(token_of("ann", "astro"));
  eve.set_bearer_token_auth(token_of("eve", "bio"));
  const std::string good = R"({"description":"two nodes","script":"#!/bin/sh\nsrun hostname","options":{"nodes":2}})";
  // Not configured yet: the template has no project to belong to.
  auto early = admin.Put("/api/v1/projects/astro/templates/sweep", good, "application/json");
  EXPECT_EQ(early->status, 404) << early->body;
  ASSERT_EQ(admin.Put("/api/v1/projects/astro", R"({"dataPlane":"dp1"})", "application/json")->status, 200);
  auto made = admin.Put("/api/v1/projects/astro/templates/sweep", good, "application/json");
  ASSERT_EQ(made->status, 201) << made->body;
  EXPECT_EQ(json::parse(made->body)["updatedBy"], "admin");
  EXPECT_EQ(admin.Put("/api/v1/projects/astro/templates/sweep", good, "application/json")->status, 200);
  // A member writes nothing; another project's user reads nothing.
  EXPECT_EQ(ann.Put("/api/v1/projects/astro/templates/mine", good, "application/json")->status, 403);
  EXPECT_EQ(ann.Delete("/api/v1/projects/astro/templates/sweep")->status, 403);
  auto listed = ann.Get("/api/v1/projects/astro/templates");
  ASSERT_EQ(listed->status, 200);
  auto templates = json::parse(listed->body)["templates"];
  ASSERT_EQ(templates.size(), 1u);
  EXPECT_EQ(templates[0]["options"]["nodes"], 2);
  // The CLI over the same routes: set from a script file, list, a refused option, delete.
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/t.sh", "#!/bin/bash\nsrun hostname\n").ok());
  auto cli = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = {HPCPLANE_BIN, "projects", "templates"};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--server", Url(), "--token-file", dir_ + "/controlplane/admin.token"});
    auto r = RunProcess(argv);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : ProcessResult{};
  };
  auto set = cli(
      {"set", "astro", "cli-t", "--script", dir_ + "/t.sh", "--option", "nodes=2", "--description", "from the CLI"});
  EXPECT_EQ(set.exit_code, 0) << set.err;
  auto list = cli({"list", "astro"});
  EXPECT_NE(list.out.find("cli-t"), std::string::npos) << list.out;
  EXPECT_NE(list.out.find("nodes=2"), std::string::npos) << list.out;
  auto refused = cli({"set", "astro", "cli-t", "--script", dir_ + "/t.sh", "--option", "chdir=/"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("options.chdir"), std::string::npos) << refused.err;
  EXPECT_EQ(cli({"delete", "astro", "cli-t"}).exit_code, 0);
  EXPECT_EQ(cli({"delete", "astro", "cli-t"}).exit_code, 1);
  EXPECT_EQ(eve.Get("/api/v1/projects/astro/templates")->status, 403);
  EXPECT_EQ(eve.Get("/api/v1/projects/astro/templates/sweep")->status, 403);
  EXPECT_EQ(httplib::Client(Url()).Get("/api/v1/projects/astro/templates")->status, 401);
  // Refusals: each a 400 naming the field, nothing stored.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"sweep", R"({"script":"echo no shebang"})"},
      {"sweep", R"({"script":"#!/bin/sh","options":{"uid":"0"}})"},
      {"sweep", R"({"script":"#!/bin/sh","options":{"mem":"1G; rm -rf /"}})"},
      {"sweep", R"({"script":"#!/bin/sh","description":7})"},
      {"sweep", R"({"script":"#!/bin/sh","extra":true})"},
      {"Bad_Name", R"({"script":"#!/bin/sh"})"},
      {"x%2e%2e", R"({"script":"#!/bin/sh"})"},
  };
  for (const auto& [name, body] : bad) {
    auto r = admin.Put("/api/v1/projects/astro/templates/" + name, body, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 400) << name << " " << body << ": " << r->body;
    EXPECT_FALSE(ErrorOf(r->body)["field"].get<std::string>().empty()) << r->body;
  }
  EXPECT_EQ(json::parse(ann.Get("/api/v1/projects/astro/templates/sweep")->body)["script"], "#!/bin/sh\nsrun hostname");
  // Submitting from a template: the flag on, an unknown template and a bad override refused.
  ASSERT_EQ(admin.Put("/api/v1/flags/EnableHPCJobs", R"({"value":true})", "application/json")->status, 200);
  auto unknown = ann.Post("/api/v1/projects/astro/jobs",
                          R"({"dataPlane":"dp1","workspace":"ann-astro","template":"nope"})", "application/json");
  EXPECT_EQ(unknown->status, 400);
  EXPECT_EQ(ErrorOf(unknown->body)["field"], "template") << unknown->body;
  auto override_bad = ann.Post(
      "/api/v1/projects/astro/jobs",
      R"({"dataPlane":"dp1","workspace":"ann-astro","template":"sweep","options":{"chdir":"/"}})", "application/json");
  EXPECT_EQ(override_bad->status, 400);
  EXPECT_EQ(ErrorOf(override_bad->body)["field"], "options.chdir") << override_bad->body;
  auto no_script =
      ann.Post("/api/v1/projects/astro/jobs", R"({"dataPlane":"dp1","workspace":"ann-astro"})", "application/json");
  EXPECT_EQ(ErrorOf(no_script->body)["field"], "script") << no_script->body;
  // From a good template, the request passes every check of its own and stops only where no
  // data plane dp1 has reported Slurm.
  auto from = ann.Post("/api/v1/projects/astro/jobs",
                       R"({"dataPlane":"dp1","workspace":"ann-astro","template":"sweep"})", "application/json");
  EXPECT_EQ(from->status, 409) << from->body;
  EXPECT_NE(from->body.find("dp1"), std::string::npos) << from->body;
  // Deleted once; the second time there is nothing to delete.
  EXPECT_EQ(admin.Delete("/api/v1/projects/astro/templates/sweep")->status, 200);
  EXPECT_EQ(admin.Delete("/api/v1/projects/astro/templates/sweep")->status, 404);
  // A project holds 50 at most: the 51st is refused, replacing one of the 50 is not.
  for (int i = 0; i < 50; ++i) {
    ASSERT_EQ(admin.Put("/api/v1/projects/astro/templates/t" + std::to_string(i), good, "application/json")->status,
              201);
  }
  EXPECT_EQ(admin.Put("/api/v1/projects/astro/templates/t50", good, "application/json")->status, 409);
  EXPECT_EQ(admin.Put("/api/v1/projects/astro/templates/t7", good, "application/json")->status, 200);
  auto audit = json::parse(admin.Get("/api/v1/audit")->body).dump();
  for (const char* action : {"template.create", "template.update", "template.delete"}) {
    EXPECT_NE(audit.find(action), std::string::npos) << action;
  }
  EXPECT_TRUE(Alive());
}

TEST_F(ServerHardening, RepeatedFailedSignInsFromOneAddressAreRateLimited) {
  httplib::Client guesser(Url());
  int unauthorized = 0, limited = 0;
  std::string retry_after;
  for (int i = 0; i < 15; ++i) {
    guesser.set_bearer_token_auth("guess-" + std::to_string(i));
    auto r = guesser.Get("/api/v1/flags");
    ASSERT_TRUE(r);
    if (r->status == 401) ++unauthorized;
    if (r->status == 429) {
      ++limited;
      retry_after = r->get_header_value("Retry-After");
    }
  }
  EXPECT_EQ(unauthorized, 10);
  EXPECT_EQ(limited, 5);
  EXPECT_FALSE(retry_after.empty());
  // A right token from the same address still works (others behind the same proxy or NAT), and
  // the limited failures are not each written to the audit log.
  EXPECT_EQ(Admin().Get("/api/v1/flags")->status, 200);
  auto audit = Admin().Get("/api/v1/audit?limit=100");
  ASSERT_EQ(audit->status, 200);
  int failed = 0;
  const json entries = json::parse(audit->body)["entries"];
  for (const auto& e : entries) failed += e["action"] == "signin.failed" ? 1 : 0;
  EXPECT_EQ(failed, 10);
}

// Job names are the user's: in a CSV export they must not become spreadsheet formulas.
TEST_F(ServerHardening, CsvExportNeutralisesFormulasAndWorkspaceIdsStayInTheirProject) {
  auto admin = Admin();
  auto agent_token = json::parse(
      admin.Post("/api/v1/tokens", R"({"subject":"dp1","role":"agent"})", "application/json")->body)["token"];
  httplib::Client agent(Url());
  agent.set_bearer_token_auth(agent_token.get<std::string>());
  json jobs = {{"jobs",
                {{{"cluster", "c1"},
                  {"jobId", 1},
                  {"submitTime", 100},
                  {"name", "=HYPERLINK(\"http://x\")"},
                  {"user", "ann"},
                  {"project", "astro"},
                  {"partition", "ann-astro"},
                  {"state", "COMPLETED"}},
                 {{"cluster", "c1"},
                  {"jobId", 2},
                  {"submitTime", 101},
                  {"name", "plain-name"},
                  {"user", "ann"},
                  {"project", "astro"},
                  {"partition", "ann-astro"},
                  {"state", "COMPLETED"}}}}};
  auto up = agent.Post("/api/v1/dataplanes/dp1/jobs", jobs.dump(), "application/json");
  ASSERT_TRUE(up);
  ASSERT_EQ(up->status, 200) << up->body;
  auto csv = admin.Get("/api/v1/projects/astro/jobs/export?format=csv");
  ASSERT_TRUE(csv);
  EXPECT_NE(csv->body.find(R"x("'=HYPERLINK(""http://x"")")x"), std::string::npos) << csv->body;
  EXPECT_EQ(csv->body.find(",=HYPERLINK"), std::string::npos) << csv->body;
  EXPECT_NE(csv->body.find(",plain-name,"), std::string::npos) << csv->body;

  // Two projects on one data plane; a member of the second tries to take the first's id.
  auto rep = agent.Post("/api/v1/dataplanes/dp1/report",
                        R"({"state":"Healthy","componentVersions":{"slurm/slurmctld":"22.05.8"}})", "application/json");
  ASSERT_EQ(rep->status, 200) << rep->body;
  for (const std::string p : {"proja", "projb"}) {
    auto r = admin.Put("/api/v1/projects/" + p, R"({"dataPlane":"dp1"})", "application/json");
    ASSERT_EQ(r->status, 200) << r->body;
  }
  auto user_token = [&](const std::string& who, const std::string& project) {
    return json::parse(admin
                           .Post("/api/v1/tokens",
                                 json{{"subject", who}, {"role", "user"}, {"projects", {project}}}.dump(),
                                 "application/json")
                           ->body)["token"]
        .get<std::string>();
  };
  httplib::Client carol(Url()), dave(Url());
  carol.set_bearer_token_auth(user_token("carol", "proja"));
  dave.set_bearer_token_auth(user_token("dave", "projb"));
  auto mine = carol.Post("/api/v1/projects/proja/workspaces", "{}", "application/json");
  ASSERT_EQ(mine->status, 202) << mine->body;
  EXPECT_EQ(json::parse(mine->body)["id"], "carol-proja");
  auto taken = dave.Post("/api/v1/projects/projb/workspaces", R"({"name":"carol-proja"})", "application/json");
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->status, 409) << taken->body;
  EXPECT_EQ(ErrorOf(taken->body)["message"], "workspace id carol-proja is taken; choose another name");
  // Stopped and settled, it is still not another project's to take over.
  ASSERT_EQ(carol.Delete("/api/v1/projects/proja/workspaces/carol-proja")->status, 202);
  EXPECT_EQ(dave.Post("/api/v1/projects/projb/workspaces", R"({"name":"carol-proja"})", "application/json")->status,
            409);
  auto still = carol.Get("/api/v1/projects/proja/workspaces/carol-proja");
  ASSERT_EQ(still->status, 200);
  EXPECT_EQ(json::parse(still->body)["project"], "proja");
}

TEST(ServerTls, ServesHttpsThatClientsVerifyAndRefusesPlainHttpOffLoopback) {
  auto dir = *files::MakeTempDir("hpcplane-tls");
  // A self-signed certificate for 127.0.0.1, made with the openssl command.
  auto gen =
      RunProcess({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=127.0.0.1",
                  "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", dir + "/key.pem", "-out", dir + "/cert.pem"});
  ASSERT_TRUE(gen.ok() && gen->exit_code == 0) << (gen.ok() ? gen->err : gen.status().message());
  // Plain HTTP off loopback is refused before anything listens.
  auto plain = RunProcess({HPCPLANE_BIN, "--state-dir", dir, "server", "--listen", "0.0.0.0:0"});
  ASSERT_TRUE(plain.ok());
  EXPECT_NE(plain->exit_code, 0);
  EXPECT_NE(plain->err.find("refusing plain HTTP on 0.0.0.0"), std::string::npos) << plain->err;
  auto nokey = RunProcess(
      {HPCPLANE_BIN, "--state-dir", dir, "server", "--listen", "127.0.0.1:0", "--tls-cert", dir + "/cert.pem"});
  ASSERT_TRUE(nokey.ok());
  EXPECT_NE(nokey->exit_code, 0);
  EXPECT_NE(nokey->err.find("--tls-key"), std::string::npos) << nokey->err;

  int port = FreeLoopbackPort();
  Background server({HPCPLANE_BIN, "--state-dir", dir, "server", "--listen", "127.0.0.1:" + std::to_string(port),
                     "--tls-cert", dir + "/cert.pem", "--tls-key", dir + "/key.pem"},
                    dir + "/server.log");
  const std::string url = "https://127.0.0.1:" + std::to_string(port);
  ASSERT_TRUE(WaitFor([&] { return files::Exists(dir + "/controlplane/admin.token"); }, 20s)) << server.Log();
  const std::string token = Trim(files::Read(dir + "/controlplane/admin.token").value_or(""));
  ASSERT_TRUE(WaitFor(
      [&] {
        httplib::Client c(url);
        c.set_ca_cert_path(dir + "/cert.pem");
        c.set_bearer_token_auth(token);
        auto r = c.Get("/api/v1/flags");
        return r && r->status == 200;
      },
      20s))
      << server.Log();
  // Without the CA the client refuses the server; plain HTTP gets no answer.
  httplib::Client unverified(url);
  EXPECT_FALSE(unverified.Get("/api/v1/flags"));
  httplib::Client clear("http://127.0.0.1:" + std::to_string(port));
  auto c = clear.Get("/api/v1/flags");
  EXPECT_TRUE(!c || c->status >= 400);
  // The CLI speaks it with --ca-file.
  auto cli = RunProcess({HPCPLANE_BIN, "flags", "get", "--server", url, "--ca-file", dir + "/cert.pem", "--token-file",
                         dir + "/controlplane/admin.token"});
  ASSERT_TRUE(cli.ok());
  EXPECT_EQ(cli->exit_code, 0) << cli->err;
  EXPECT_NE(cli->out.find("EnableHPCJobs=false"), std::string::npos) << cli->out;
  server.Stop();
  (void)files::RemoveAll(dir);
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
