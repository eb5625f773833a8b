// The control plane's /metrics as Prometheus sees it: the text passes `promtool check metrics`,
// a real Prometheus (Debian's package, on loopback) scrapes it with a metrics-role token, and
// PromQL over the scraped series shows the requests, ingested records and data planes.
#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <functional>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "harness.h"

#include <map>

namespace hpc::it {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class ServerMetricsIT : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *files::MakeTempDir("hpcplane-metrics");
    port_ = FreeLoopbackPort();
    server_ = std::make_unique<Background>(std::vector<std::string>{HPCPLANE_BIN, "--state-dir", dir_, "server",
                                                                    "--listen", "127.0.0.1:" + std::to_string(port_)},
                                           dir_ + "/server.log");
    ASSERT_TRUE(WaitFor(
        [&] {
          admin_ = Trim(files::Read(dir_ + "/controlplane/admin.token").value_or(""));
          auto r = Client(admin_).Get("/api/v1/flags");
          return !admin_.empty() && r && r->status == 200;
        },
        20s))
        << server_->Log();
  }
  void TearDown() override {
    prometheus_.reset();
    server_.reset();
    (void)files::RemoveAll(dir_);
  }
  httplib::Client Client(const std::string& token) const {
    httplib::Client c("127.0.0.1", port_);
    c.set_bearer_token_auth(token);
    return c;
  }
  std::string NewToken(const std::string& body) {
    auto r = Client(admin_).Post("/api/v1/tokens", body, "application/json");
    return r && r->status == 201 ? json::parse(r->body)["token"].get<std::string>() : "";
  }

  std::string dir_, admin_;
  int port_ = 0;
  std::unique_ptr<Background> server_, prometheus_;
};

TEST_F(ServerMetricsIT, PromtoolAcceptsThemAndARealPrometheusScrapesThem) {
  const std::string scraper = NewToken(R"({"subject":"prometheus","role":"metrics"})");
  const std::string agent = NewToken(R"({"subject":"dp1","role":"agent"})");
  ASSERT_FALSE(scraper.empty());
  // Traffic: a report, 3 records, a page, a 404 and a refused scrape by a user.
  ASSERT_EQ(Client(agent)
                .Post("/api/v1/dataplanes/dp1/report",
                      R"({"state":"Healthy","componentVersions":{"slurm/slurmctld":"22.05.8"}})", "application/json")
                ->status,
            200);
  json jobs = {{"jobs", json::array()}};
  for (int i = 1; i <= 3; ++i) {
    jobs["jobs"].push_back({{"cluster", "c1"},
                            {"jobId", i},
                            {"submitTime", 100 + i},
                            {"user", "ann"},
                            {"project", "astro"},
                            {"partition", "p"},
                            {"state", "COMPLETED"}});
  }
  ASSERT_EQ(Client(agent).Post("/api/v1/dataplanes/dp1/jobs", jobs.dump(), "application/json")->status, 200);
  EXPECT_EQ(Client(admin_).Get("/api/v1/projects/astro/jobs?limit=2")->status, 200);
  EXPECT_EQ(Client(admin_).Get("/api/v1/no/such/path/4711")->status, 404);
  const std::string user = NewToken(R"({"subject":"ann","role":"user","projects":["astro"]})");
  EXPECT_EQ(Client(user).Get("/metrics")->status, 403);
  EXPECT_EQ(httplib::Client("127.0.0.1", port_).Get("/metrics")->status, 401);
  // The metrics role reads /metrics and nothing else.
  EXPECT_EQ(Client(scraper).Get("/api/v1/projects/astro/jobs")->status, 403);
  EXPECT_EQ(Client(scraper).Get("/api/v1/audit")->status, 403);

  auto scrape = Client(scraper).Get("/metrics");
  ASSERT_TRUE(scrape);
  ASSERT_EQ(scrape->status, 200) << scrape->body;
  const std::string& text = scrape->body;
  EXPECT_NE(text.find("hpcplane_ingested_job_records_total 3"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(hpcplane_data_planes{state="Healthy"} 1)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"(hpcplane_http_requests_total{code="200",method="POST",route="/api/v1/dataplanes/{}/jobs"} 1)"),
            std::string::npos)
      << text;
  // Raw paths never become labels.
  EXPECT_EQ(text.find("4711"), std::string::npos);
  EXPECT_NE(text.find(R"(route="unmatched")"), std::string::npos);
  EXPECT_NE(text.find("hpcplane_store_operation_duration_seconds_bucket"), std::string::npos);

  ASSERT_TRUE(files::WriteAtomic(dir_ + "/metrics.txt", text, 0600).ok());
  auto check = RunProcess({"/bin/sh", "-c", "promtool check metrics < " + dir_ + "/metrics.txt"});
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->exit_code, 0) << check->out << check->err;

  // A real Prometheus on loopback, scraping every second with the metrics token.
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/scrape.token", scraper, 0600).ok());
  const int prom_port = FreeLoopbackPort();
  const std::string config = fmt::format(
      "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: hpcplane\n    metrics_path: /metrics\n"
      "    authorization:\n      credentials_file: {}/scrape.token\n    static_configs:\n"
      "      - targets: ['127.0.0.1:{}']\n",
      dir_, port_);
  ASSERT_TRUE(files::WriteAtomic(dir_ + "/prometheus.yml", config, 0600).ok());
  prometheus_ = std::make_unique<Background>(
      std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + dir_ + "/prometheus.yml",
                               "--storage.tsdb.path=" + dir_ + "/tsdb",
                               "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
      dir_ + "/prometheus.log");
  httplib::Client prom("127.0.0.1", prom_port);
  auto query = [&](const std::string& q) {
    auto r = prom.Get("/api/v1/query", httplib::Params{{"query", q}}, httplib::Headers{});
    return r && r->status == 200 ? json::parse(r->body, nullptr, false) : json();
  };
  // The target is up and PromQL sees what was ingested and how requests went.
  ASSERT_TRUE(WaitFor(
      [&] {
        json up = query("up{job=\"hpcplane\"}");
        return up.is_object() && !up["data"]["result"].empty() && up["data"]["result"][0]["value"][1] == "1";
      },
      60s))
      << prometheus_->Log();
  json ingested = query("hpcplane_ingested_job_records_total");
  ASSERT_FALSE(ingested["data"]["result"].empty()) << ingested;
  EXPECT_EQ(ingested["data"]["result"][0]["value"][1], "3");
  json by_code = query("sum by (code) (hpcplane_http_requests_total{route=\"unmatched\"})");
  ASSERT_FALSE(by_code["data"]["result"].empty()) << by_code;
  EXPECT_EQ(by_code["data"]["result"][0]["metric"]["code"], "404");
  json healthy = query("hpcplane_data_planes{state=\"Healthy\"}");
  ASSERT_FALSE(healthy["data"]["result"].empty()) << healthy;
  EXPECT_EQ(healthy["data"]["result"][0]["value"][1], "1");
}

// Removes a test's temp dir however the test ends (an ASSERT returns early).
struct RemovedAtEnd {
  std::string dir;
  ~RemovedAtEnd() { (void)files::RemoveAll(dir); }
};

// Every query of the dashboard under deploy/grafana parses as PromQL (promtool) and asks for
// hpcplane's metrics.
TEST(GrafanaDashboard, QueriesAreValidPromQLOverExportedMetrics) {
  auto dash = json::parse(files::Read(std::string(HPCPLANE_SOURCE_DIR) + "/deploy/grafana/hpcplane.json").value_or(""),
                          nullptr, false);
  ASSERT_TRUE(dash.is_object());
  auto dir = *files::MakeTempDir("hpcplane-dash");
  RemovedAtEnd cleanup{dir};
  std::string rules = "groups:\n  - name: dashboard\n    rules:\n";
  int n = 0;
  for (const auto& panel : dash["panels"]) {
    for (const auto& target : panel["targets"]) {
      std::string expr = target["expr"];
      rules += fmt::format("      - record: dashboard:q{}\n        expr: {}\n", n++, json(expr).dump());
      EXPECT_NE(expr.find("hpcplane_"), std::string::npos) << expr;
    }
  }
  EXPECT_GE(n, 12);
  ASSERT_TRUE(files::WriteAtomic(dir + "/rules.yml", rules, 0600).ok());
  auto check = RunProcess({"promtool", "check", "rules", dir + "/rules.yml"});
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->exit_code, 0) << check->out << check->err;
}

TEST(DataPlaneMetricsIT, ABadListenAddressIsRefusedBeforeAnythingIsCreated) {
  auto dir = *files::MakeTempDir("hpcplane-mbad");
  RemovedAtEnd cleanup{dir};
  for (const std::string flag : {"--metrics-listen", "--control-plane"}) {
    auto r = RunProcess({HPCPLANE_BIN, "--state-dir", dir, "up", flag, "127.0.0.1:abc"});
    ASSERT_TRUE(r.ok());
    EXPECT_NE(r->exit_code, 0);
    EXPECT_NE(r->err.find(flag + ": listen address: port must be 0-65535"), std::string::npos) << r->err;
  }
  EXPECT_FALSE(files::Exists(dir + "/clusters"));
}

// Runs a Prometheus on loopback scraping `target` every second with the token in `token_file`.
std::unique_ptr<Background> StartPrometheus(const std::string& dir, const std::string& target,
                                            const std::string& token_file, int port) {
  const std::string config = fmt::format(
      "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: dataplane\n    authorization:\n"
      "      credentials_file: {}\n    static_configs:\n      - targets: ['{}']\n",
      token_file, target);
  if (!files::WriteAtomic(dir + "/prometheus.yml", config, 0600).ok()) return nullptr;
  return std::make_unique<Background>(
      std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                               "--storage.tsdb.path=" + dir + "/tsdb",
                               "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir + "/prometheus.log");
}

// The data plane daemon's metrics, scraped by a real Prometheus while a nodeset scales from
// zero to two workers for a job and back: PromQL over the scraped series shows 0 -> 2 -> 0.
TEST(DataPlaneMetricsIT, PrometheusSeesANodeSetGoFromZeroToTwoAndBack) {
  const int metrics_port = FreeLoopbackPort();
  ClusterOptions o;
  o.replicas = -1;
  o.max_replicas = 4;
  o.extra_nodeset_spec = "  idleTimeout: 5s\n";
  o.extra_up_args = {"--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port)};
  TestCluster c("mz", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  const std::string token_file = c.ClusterDir() + "/metrics.token";
  ASSERT_TRUE(files::Exists(token_file));
  const std::string token = Trim(files::Read(token_file).value_or(""));
  httplib::Client daemon("127.0.0.1", metrics_port);
  EXPECT_EQ(daemon.Get("/metrics")->status, 401);
  daemon.set_bearer_token_auth(token);
  auto first = daemon.Get("/metrics");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->status, 200);
  EXPECT_NE(first->body.find(R"(hpcplane_nodeset_pods{nodeset="cpu"} 0)"), std::string::npos) << first->body;

  auto dir = *files::MakeTempDir("hpcplane-prom");
  RemovedAtEnd cleanup{dir};
  const int prom_port = FreeLoopbackPort();
  auto prometheus = StartPrometheus(dir, "127.0.0.1:" + std::to_string(metrics_port), token_file, prom_port);
  ASSERT_TRUE(prometheus);
  httplib::Client prom("127.0.0.1", prom_port);
  auto query = [&](const std::string& path, const httplib::Params& params) {
    auto r = prom.Get(path, params, httplib::Headers{});
    return r && r->status == 200 ? json::parse(r->body, nullptr, false) : json();
  };
  // The nodeset's size: its worker pods (desired follows demand and drops first).
  const std::string desired = "hpcplane_nodeset_pods{nodeset=\"cpu\"}";
  ASSERT_TRUE(WaitFor(
      [&] {
        json v = query("/api/v1/query", {{"query", desired}});
        return v.is_object() && !v["data"]["result"].empty();
      },
      std::chrono::seconds(60)))
      << prometheus->Log();
  const auto begin = std::chrono::system_clock::now();

  auto r = c.Login("alice", {"sbatch", "-N2", "--wait", "-o", "/dev/null", "--wrap", "srun hostname"},
                   std::chrono::seconds(90));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  ASSERT_TRUE(WaitFor([&] { return c.NodeSetStatusField("replicas") == "0"; }, std::chrono::seconds(60)));
  // Prometheus has scraped the return to zero.
  ASSERT_TRUE(WaitFor(
      [&] {
        json v = query("/api/v1/query", {{"query", "hpcplane_nodeset_pods{nodeset=\"cpu\"}"}});
        return v.is_object() && !v["data"]["result"].empty() && v["data"]["result"][0]["value"][1] == "0" &&
               query("/api/v1/query",
                     {{"query", "max_over_time(" + desired + "[5m])"}})["data"]["result"][0]["value"][1] == "2";
      },
      std::chrono::seconds(30)))
      << query("/api/v1/query", {{"query", "hpcplane_nodeset_pods{nodeset=\"cpu\"}"}}) << "\n"
      << query("/api/v1/query", {{"query", "max_over_time(" + desired + "[5m])"}}) << "\n"
      << daemon.Get("/metrics")->body;
  auto unix_s = [](std::chrono::system_clock::time_point t) {
    return std::to_string(std::chrono::duration_cast<std::chrono::seconds>(t.time_since_epoch()).count());
  };
  json range =
      query("/api/v1/query_range", {{"query", desired},
                                    {"start", unix_s(begin - std::chrono::seconds(2))},
                                    {"end", unix_s(std::chrono::system_clock::now() + std::chrono::seconds(2))},
                                    {"step", "1"}});
  ASSERT_FALSE(range["data"]["result"].empty()) << range;
  // The series in order, with repeats folded: 0, 2, 0.
  std::vector<std::string> seen;
  for (const auto& point : range["data"]["result"][0]["values"]) {
    std::string v = point[1];
    if (seen.empty() || seen.back() != v) seen.push_back(v);
  }
  // Up from 0 to 2, then down to 0; workers leave one per pass as each drains, so a scrape may
  // catch 1 on the way down (0, 2, 1, 0), never a rise after the fall.
  ASSERT_GE(seen.size(), 3u) << range;
  EXPECT_EQ(seen.front(), "0") << range;
  EXPECT_EQ(seen.back(), "0") << range;
  auto peak = std::find(seen.begin(), seen.end(), "2");
  ASSERT_NE(peak, seen.end()) << range;
  EXPECT_TRUE(std::is_sorted(seen.begin(), peak + 1)) << range;
  EXPECT_TRUE(std::is_sorted(peak, seen.end(), std::greater<>())) << range;
  json ups = query("/api/v1/query", {{"query", "hpcplane_scale_decisions_total{nodeset=\"cpu\"}"}});
  std::map<std::string, std::string> decisions;
  for (const auto& x : ups["data"]["result"]) decisions[x["metric"]["direction"]] = x["value"][1];
  EXPECT_EQ(decisions["up"], "1") << ups;  // -N2 needs both workers at once: one decision
  // Down may take two steps: the batch host of a -N2 job finishes a moment after the other node,
  // and a pass in between wants one worker.
  const int downs = std::atoi(decisions["down"].c_str());
  EXPECT_TRUE(downs == 1 || downs == 2) << ups;
  json waits = query("/api/v1/query", {{"query", "hpcplane_job_start_wait_seconds_count"}});
  ASSERT_FALSE(waits["data"]["result"].empty()) << waits;
  EXPECT_EQ(waits["data"]["result"][0]["value"][1], "1");

  auto text = daemon.Get("/metrics");
  ASSERT_TRUE(text && text->status == 200);
  ASSERT_TRUE(files::WriteAtomic(dir + "/metrics.txt", text->body, 0600).ok());
  auto check = RunProcess({"/bin/sh", "-c", "promtool check metrics < " + dir + "/metrics.txt"});
  ASSERT_TRUE(check.ok());
  EXPECT_EQ(check->exit_code, 0) << check->out << check->err << text->body;

  // Slurm 26.05's own OpenMetrics, served by slurmctld on its port to whoever reaches it (the
  // cluster's pods): the job above among the completed ones, and text promtool accepts.
  const std::string slurm_jobs = "http://" + c.name() + "-controller:6817/metrics/jobs";
  auto jobs = c.Login("alice", {"curl", "-sf", "-m", "5", slurm_jobs});
  ASSERT_EQ(jobs.exit_code, 0) << jobs.err;
  EXPECT_NE(jobs.out.find("slurm_jobs_completed 1"), std::string::npos) << jobs.out;
  ASSERT_TRUE(files::WriteAtomic(dir + "/slurm.txt", jobs.out, 0600).ok());
  auto slurm_check = RunProcess({"/bin/sh", "-c", "promtool check metrics < " + dir + "/slurm.txt"});
  ASSERT_TRUE(slurm_check.ok());
  EXPECT_EQ(slurm_check->exit_code, 0) << slurm_check->out << slurm_check->err << jobs.out;
  prometheus.reset();
}

}  // namespace
}  // namespace hpc::it
