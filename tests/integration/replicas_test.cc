// The control plane's store under concurrent writers and crashes, as real `hpcplane server`
// processes: many agents posting at once while the server is killed with SIGKILL lose no
// acknowledged record and duplicate none (SQLite and PostgreSQL), and two servers on one
// PostgreSQL serve one API — the way past one machine.
#include <httplib.h>

#include <atomic>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "harness.h"
#include "server/store.h"
#include "testkit/postgres.h"

namespace hpc::it {
namespace {

using testkit::PostgresServer;

using namespace std::chrono_literals;
using nlohmann::json;

// One `hpcplane server` on a store, with its own state dir (and so its own admin token).
class ServerProcess {
 public:
  ServerProcess(const std::string& store_url) : store_url_(store_url) {
    dir_ = *files::MakeTempDir("hpcplane-replica");
    Start();
  }
  ~ServerProcess() {
    server_.reset();
    (void)files::RemoveAll(dir_);
  }
  void Start() {
    port_ = FreeLoopbackPort();
    server_ = std::make_unique<Background>(
        std::vector<std::string>{HPCPLANE_BIN, "--state-dir", dir_, "server", "--listen",
                                 "127.0.0.1:" + std::to_string(port_), "--store", store_url_},
        dir_ + "/server.log");
    ready_ = WaitFor(
        [&] {
          token_ = Trim(files::Read(dir_ + "/controlplane/admin.token").value_or(""));
          auto r = Client(token_).Get("/api/v1/flags");
          return !token_.empty() && r && r->status == 200;
        },
        30s);
  }
  void Kill9() { server_->Kill9(); }
  bool ready() const { return ready_; }
  std::string Log() const { return server_->Log(); }
  httplib::Client Client(const std::string& token) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_bearer_token_auth(token);
    c.set_connection_timeout(2);
    return c;
  }
  const std::string& admin() const { return token_; }

 private:
  std::string store_url_, dir_, token_;
  int port_ = 0;
  bool ready_ = false;
  std::unique_ptr<Background> server_;
};

json Batch(int64_t first, int n) {
  json jobs = json::array();
  for (int i = 0; i < n; ++i) {
    jobs.push_back({{"cluster", "c1"},
                    {"jobId", first + i},
                    {"submitTime", 1700000000 + first + i},
                    {"name", "j"},
                    {"user", "ann"},
                    {"project", "astro"},
                    {"partition", "ann-astro"},
                    {"state", "COMPLETED"}});
  }
  return {{"jobs", jobs}};
}

std::string AgentToken(const ServerProcess& s, const std::string& data_plane) {
  auto r = s.Client(s.admin()).Post("/api/v1/tokens", json{{"subject", data_plane}, {"role", "agent"}}.dump(),
                                    "application/json");
  return r && r->status == 201 ? json::parse(r->body)["token"].get<std::string>() : "";
}

class StoreUnderFire : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgres") {
      pg_ = std::make_unique<PostgresServer>();
      ASSERT_TRUE(pg_->ok()) << pg_->error();
      url_ = pg_->url();
    } else {
      dir_ = *files::MakeTempDir("hpcplane-fire");
      url_ = "sqlite:" + dir_ + "/cp.db";
    }
  }
  void TearDown() override {
    pg_.reset();
    if (!dir_.empty()) (void)files::RemoveAll(dir_);
  }
  std::unique_ptr<PostgresServer> pg_;
  std::string dir_, url_;
};

// Guards the shared SQLite connection: two agents posting at once got 503s, and a write could
// be rolled back with another request's failure.
TEST_P(StoreUnderFire, Kill9MidIngestLosesNoAcknowledgedRecordAndDuplicatesNone) {
  ServerProcess server(url_);
  ASSERT_TRUE(server.ready()) << server.Log();
  constexpr int kAgents = 6, kBatch = 50;
  std::vector<std::string> tokens;
  for (int a = 0; a < kAgents; ++a) tokens.push_back(AgentToken(server, "dp" + std::to_string(a)));
  std::atomic<bool> stop{false};
  std::atomic<int> acknowledged_batches{0}, refused{0};
  std::mutex mu;
  std::map<std::string, std::set<int64_t>> acknowledged;  // data plane -> first job id of each batch
  std::map<std::string, std::set<int64_t>> sent;
  std::vector<std::thread> agents;
  for (int a = 0; a < kAgents; ++a) {
    agents.emplace_back([&, a] {
      const std::string dp = "dp" + std::to_string(a);
      auto c = server.Client(tokens[a]);
      for (int64_t first = 1; !stop; first += kBatch) {
        {
          std::lock_guard<std::mutex> l(mu);
          sent[dp].insert(first);
        }
        auto r = c.Post("/api/v1/dataplanes/" + dp + "/jobs", Batch(first, kBatch).dump(), "application/json");
        if (!r) break;  // the server is gone
        if (r->status != 200) {
          ++refused;
          continue;
        }
        ++acknowledged_batches;
        std::lock_guard<std::mutex> l(mu);
        acknowledged[dp].insert(first);
      }
    });
  }
  ASSERT_TRUE(WaitFor([&] { return acknowledged_batches >= 40; }, 60s)) << server.Log();
  server.Kill9();
  stop = true;
  for (auto& t : agents) t.join();
  EXPECT_EQ(refused, 0) << "no request is refused for being concurrent";

  // Restarted on the same store: every acknowledged batch is there whole, every other batch is
  // there whole or not at all, and no record twice.
  auto store = cp::OpenStore(url_);
  ASSERT_TRUE(store.ok()) << store.status().message();
  int64_t expected_min = 0;
  for (int a = 0; a < kAgents; ++a) {
    const std::string dp = "dp" + std::to_string(a);
    for (int64_t first : sent[dp]) {
      int present = 0;
      for (int i = 0; i < kBatch; ++i) {
        auto j = (*store)->GetJob(dp, "c1", first + i, 0);
        ASSERT_TRUE(j.ok()) << j.status().message();
        present += j->has_value() ? 1 : 0;
      }
      if (acknowledged[dp].count(first)) {
        EXPECT_EQ(present, kBatch) << dp << " batch " << first << " was acknowledged";
        expected_min += kBatch;
      } else {
        EXPECT_TRUE(present == 0 || present == kBatch) << dp << " batch " << first << ": " << present;
      }
    }
  }
  cp::JobFilter f;
  f.project = "astro";
  std::set<std::tuple<std::string, int64_t>> seen;
  int64_t listed = 0;
  ASSERT_TRUE((*store)
                  ->ExportJobs(f,
                               [&](const cp::JobRecord& r) {
                                 ++listed;
                                 EXPECT_TRUE(seen.insert({r.data_plane, r.job_id}).second)
                                     << r.data_plane << " " << r.job_id << " twice";
                                 return true;
                               })
                  .ok());
  EXPECT_GE(listed, expected_min);
  EXPECT_EQ(listed, *(*store)->CountJobs());
}

INSTANTIATE_TEST_SUITE_P(Engines, StoreUnderFire, ::testing::Values("sqlite", "postgres"));

TEST(Replicas, TwoServersOnOnePostgresServeOneApi) {
  PostgresServer pg;
  ASSERT_TRUE(pg.ok()) << pg.error();
  ServerProcess a(pg.url()), b(pg.url());
  ASSERT_TRUE(a.ready()) << a.Log();
  ASSERT_TRUE(b.ready()) << b.Log();
  // A token made on one works on the other; a flag set on one reads the same on the other.
  auto made = a.Client(a.admin()).Post("/api/v1/tokens", R"({"subject":"ann","role":"user","projects":["astro"]})",
                                       "application/json");
  ASSERT_EQ(made->status, 201) << made->body;
  const json ann = json::parse(made->body);
  EXPECT_EQ(b.Client(ann["token"]).Get("/api/v1/projects/astro/jobs")->status, 200);
  ASSERT_EQ(b.Client(b.admin()).Put("/api/v1/flags/EnableHPCJobs", R"({"value":true})", "application/json")->status,
            200);
  EXPECT_EQ(json::parse(a.Client(ann["token"]).Get("/api/v1/flags")->body)["flags"]["EnableHPCJobs"], true);

  // Agents post to either server at once; every record is there once, seen alike through both.
  constexpr int kAgents = 4, kBatches = 20, kBatch = 50;
  std::vector<std::string> tokens;
  for (int i = 0; i < kAgents; ++i) tokens.push_back(AgentToken(i % 2 ? b : a, "dp" + std::to_string(i)));
  std::atomic<int> failures{0};
  std::vector<std::thread> agents;
  for (int i = 0; i < kAgents; ++i) {
    agents.emplace_back([&, i] {
      const std::string dp = "dp" + std::to_string(i);
      auto ca = a.Client(tokens[i]), cb = b.Client(tokens[i]);
      for (int n = 0; n < kBatches; ++n) {
        // Each batch twice, once through each server: an agent retrying elsewhere duplicates nothing.
        for (auto* c : {&ca, &cb}) {
          auto r =
              c->Post("/api/v1/dataplanes/" + dp + "/jobs", Batch(1 + n * kBatch, kBatch).dump(), "application/json");
          if (!r || r->status != 200) ++failures;
        }
      }
    });
  }
  for (auto& t : agents) t.join();
  EXPECT_EQ(failures, 0);
  auto count_through = [&](const ServerProcess& s) {
    int64_t n = 0;
    std::string cursor;
    while (true) {
      auto r = s.Client(ann["token"])
                   .Get("/api/v1/projects/astro/jobs?limit=1000" + (cursor.empty() ? "" : "&cursor=" + cursor));
      if (!r || r->status != 200) return int64_t{-1};
      json page = json::parse(r->body);
      n += static_cast<int64_t>(page["jobs"].size());
      if (page["nextCursor"].is_null()) return n;
      cursor = page["nextCursor"];
    }
  };
  EXPECT_EQ(count_through(a), kAgents * kBatches * kBatch);
  EXPECT_EQ(count_through(b), kAgents * kBatches * kBatch);
  // Revoked on one, refused by both.
  ASSERT_EQ(b.Client(b.admin()).Delete("/api/v1/tokens/" + ann["id"].get<std::string>())->status, 200);
  EXPECT_EQ(a.Client(ann["token"]).Get("/api/v1/flags")->status, 401);
  EXPECT_EQ(b.Client(ann["token"]).Get("/api/v1/flags")->status, 401);
}

}  // namespace
}  // namespace hpc::it
