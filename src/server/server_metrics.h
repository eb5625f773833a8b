// The control plane server's Prometheus metrics (GET /metrics, text format): HTTP requests by
// method, route and code with their latency, job records ingested, store operation latency,
// connections the watchdog closed, and data planes by state. Labels are bounded: routes are the
// server's path templates, never a raw path, job id or user name.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <shared_mutex>
#include <string>
#include <unordered_map>

#include "server/connection_guard.h"
#include "server/store.h"

namespace hpc::cp {

class ServerMetrics {
 public:
  ServerMetrics(Store* store, int unreachable_after_seconds, const ConnectionWatchdog* watchdog);
  // One answered request; `route` is a template such as /api/v1/projects/{}/jobs.
  void Request(const std::string& method, const std::string& route, int code, double seconds);
  void Ingested(size_t records) { ingested_.Increment(static_cast<double>(records)); }
  void StoreOperation(double seconds, bool ok);
  // The metrics now, in Prometheus' text exposition format.
  std::string Render();  // one scrape at a time (the server serialises them)

 private:
  Store* store_;
  const int unreachable_after_;
  const ConnectionWatchdog* watchdog_;
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Histogram>& latency_;
  prometheus::Counter& ingested_;
  prometheus::Family<prometheus::Histogram>& store_latency_;
  prometheus::Family<prometheus::Counter>& store_errors_;
  prometheus::Family<prometheus::Gauge>& data_planes_;
  prometheus::Family<prometheus::Counter>& closed_;
  uint64_t reported_slow_ = 0, reported_over_limit_ = 0;  // what closed_ already counts

  // prometheus-cpp's Family::Add locks the family and hashes the labels on every call; on the
  // request path that made a convoy of hundreds of threads. Series are looked up here once.
  struct RequestSeries {
    prometheus::Counter* requests;
    prometheus::Histogram* latency;
  };
  std::shared_mutex series_mu_;
  std::unordered_map<std::string, RequestSeries> series_;  // "method route code"
  prometheus::Histogram* store_latency_series_;
  prometheus::Counter* store_errors_series_;
};

}  // namespace hpc::cp
