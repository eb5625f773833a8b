// What the control plane benchmarks share: env sizes and a synthetic job record of a busy
// project (50 users, 20 workspaces, 3 data planes, four submissions a second).
#pragma once

#include <cstdint>
#include <cstdlib>
#include <string>

#include "messages/job_record.h"

namespace hpc::bench {

inline int64_t Env(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoll(v) : fallback;
}

inline cp::JobRecord Job(int64_t i) {
  cp::JobRecord j;
  j.data_plane = "dp" + std::to_string(i % 3);
  j.cluster = "c1";
  j.job_id = i;
  j.submit_time = 1700000000 + i / 4;
  j.name = "job";
  j.user = "user" + std::to_string(i % 50);
  j.project = "astro";
  j.partition = "ws" + std::to_string(i % 20);
  j.state = i % 10 == 0 ? "FAILED" : "COMPLETED";
  j.exit_code = "0:0";
  j.start_time = j.submit_time + 2;
  j.end_time = j.submit_time + 60;
  j.elapsed_seconds = 58;
  j.cpu_seconds = 50;
  j.max_rss_kib = 100000 + i % 1000;
  j.nodes = 1;
  j.node_list = "ws-0";
  j.tres = "billing=1,cpu=1,mem=1024M,node=1";
  return j;
}

}  // namespace hpc::bench
