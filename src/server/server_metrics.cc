#include "server/server_metrics.h"

#include <prometheus/text_serializer.h>

#include <map>

#include "common/jwt.h"

namespace hpc::cp {
namespace {

// Seconds, from a quick page (1 ms) to a long export (10 s).
prometheus::Histogram::BucketBoundaries LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10};
}

}  // namespace

ServerMetrics::ServerMetrics(Store* store, int unreachable_after_seconds, const ConnectionWatchdog* watchdog)
    : store_(store),
      unreachable_after_(unreachable_after_seconds),
      watchdog_(watchdog),
      registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("hpcplane_http_requests_total")
                    .Help("HTTP requests answered, by method, route template and status code")
                    .Register(*registry_)),
      latency_(prometheus::BuildHistogram()
                   .Name("hpcplane_http_request_duration_seconds")
                   .Help("Time from a request's headers to its answer, by route template")
                   .Register(*registry_)),
      ingested_(prometheus::BuildCounter()
                    .Name("hpcplane_ingested_job_records_total")
                    .Help("Job records accepted from data plane agents")
                    .Register(*registry_)
                    .Add({})),
      store_latency_(prometheus::BuildHistogram()
                         .Name("hpcplane_store_operation_duration_seconds")
                         .Help("Time of one store call (a statement or a transaction)")
                         .Register(*registry_)),
      store_errors_(prometheus::BuildCounter()
                        .Name("hpcplane_store_errors_total")
                        .Help("Store calls that failed")
                        .Register(*registry_)),
      data_planes_(prometheus::BuildGauge()
                       .Name("hpcplane_data_planes")
                       .Help("Registered data planes by state (Healthy, Degraded, Unreachable)")
                       .Register(*registry_)),
      closed_(prometheus::BuildCounter()
                  .Name("hpcplane_http_connections_closed_total")
                  .Help("Connections the server closed since it started, by reason (slow: no whole request "
                        "within the deadline; over_limit: too many from one address)")
                  .Register(*registry_)) {
  // Present from the start, so that rates exist before the first event.
  for (const char* state : {"Healthy", "Degraded", "Unreachable"}) data_planes_.Add({{"state", state}});
  store_errors_series_ = &store_errors_.Add({});
  store_latency_series_ = &store_latency_.Add({}, LatencyBuckets());
  closed_.Add({{"reason", "slow"}});
  closed_.Add({{"reason", "over_limit"}});
}

void ServerMetrics::Request(const std::string& method, const std::string& route, int code, double seconds) {
  const std::string code_text = std::to_string(code);
  const std::string key = method + " " + route + " " + code_text;
  RequestSeries series{};
  {
    std::shared_lock<std::shared_mutex> l(series_mu_);
    if (auto it = series_.find(key); it != series_.end()) series = it->second;
  }
  if (!series.requests) {
    std::unique_lock<std::shared_mutex> l(series_mu_);
    auto [it, added] = series_.try_emplace(key);
    if (added) {
      it->second = {&requests_.Add({{"method", method}, {"route", route}, {"code", code_text}}),
                    &latency_.Add({{"route", route}}, LatencyBuckets())};
    }
    series = it->second;
  }
  series.requests->Increment();
  series.latency->Observe(seconds);
}

void ServerMetrics::StoreOperation(double seconds, bool ok) {
  store_latency_series_->Observe(seconds);
  if (!ok) store_errors_series_->Increment();
}

std::string ServerMetrics::Render() {
  std::map<std::string, int> states = {{"Healthy", 0}, {"Degraded", 0}, {"Unreachable", 0}};
  if (auto dps = store_->DataPlanes(); dps.ok()) {
    const int64_t now = jwt::UnixNow();
    for (const auto& dp : *dps) ++states[now - dp.last_report > unreachable_after_ ? "Unreachable" : dp.state];
  }
  for (const auto& [state, n] : states) data_planes_.Add({{"state", state}}).Set(n);
  // The watchdog counts; the counters here catch up with it at each scrape.
  const uint64_t slow = watchdog_->closed_slow(), over = watchdog_->closed_over_limit();
  closed_.Add({{"reason", "slow"}}).Increment(static_cast<double>(slow - reported_slow_));
  closed_.Add({{"reason", "over_limit"}}).Increment(static_cast<double>(over - reported_over_limit_));
  reported_slow_ = slow;
  reported_over_limit_ = over;
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace hpc::cp
