// The control plane's /metrics as Prometheus sees it: the text passes `promtool check metrics`,
// a real Prometheus (Debian's package, on loopback) scrapes it with a metrics-role token, and
// PromQL over the scraped series shows the requests, ingested records and data planes.
#include <httplib.h>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;
using nlohmann::json;

class ServerMetricsIT : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = *files::MakeTempDir("hpcplane-metrics");
    port_ = FreeLoopbackPort();
    server_ = std::make_unique<Background>(
        std::vector<std::string>{HPCPLANE_BIN, "--state-dir", dir_, "server", "--listen",
                                 "127.0.0.1:" + std::to_string(port_)},
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
  ASSERT_EQ(Client(agent).Post("/api/v1/dataplanes/dp1/report",
                               R"({"state":"Healthy","componentVersions":{"slurm/slurmctld":"22.05.8"}})",
                               "application/json")->status, 200);
  json jobs = {{"jobs", json::array()}};
  for (int i = 1; i <= 3; ++i) {
    jobs["jobs"].push_back({{"cluster", "c1"}, {"jobId", i}, {"submitTime", 100 + i}, {"user", "ann"},
                            {"project", "astro"}, {"partition", "p"}, {"state", "COMPLETED"}});
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

}  // namespace
}  // namespace hpc::it
