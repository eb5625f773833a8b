// Shared by the cluster benchmarks: a running cluster's runtime, a slurmrestd client with a
// SlurmUser token, and the percentile helpers.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "api/environments.h"
#include "app/environments.h"
#include "app/runtime_factory.h"
#include "common/jwt.h"
#include "operator/builders.h"
#include "operator/cluster_paths.h"
#include "operator/store.h"
#include "slurm/rest_client.h"

namespace hpc::bench {

using Clock = std::chrono::steady_clock;

inline double Ms(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

inline double Pct(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
}

struct BenchCluster {
  api::SlurmCluster cluster;
  std::unique_ptr<runtime::PodRuntime> rt;
  std::unique_ptr<slurm::RestClient> rest;
  std::string jwt_key;
};

// `supervise`: the benchmark starts pods itself (the hpcplane binary must sit next to it).
inline Result<std::unique_ptr<BenchCluster>> OpenBenchCluster(const op::ClusterPaths& paths, bool supervise) {
  auto b = std::make_unique<BenchCluster>();
  ASSIGN_OR_RETURN(b->cluster, op::Store(paths.Dir()).LoadCluster());
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  std::string exe(self, n > 0 ? static_cast<size_t>(n) : 0);
  std::string hpcplane = exe.substr(0, exe.rfind('/')) + "/hpcplane";
  if (supervise) {
    ASSIGN_OR_RETURN(b->rt, app::OpenSupervisingRuntime(paths, b->cluster.spec.subnet, hpcplane));
  } else {
    ASSIGN_OR_RETURN(b->rt, app::OpenClientRuntime(paths, hpcplane));
  }
  ASSIGN_OR_RETURN(auto secret, b->rt->GetSecret(op::kSecretJwt));
  if (!secret) return Status::Error("cluster has no JWT key yet");
  b->jwt_key = secret->data.at("jwt_hs256.key");
  std::string endpoint = b->cluster.status.endpoints["slurmrestd"];  // http://IP:PORT
  auto start = endpoint.find("//") + 2;
  std::string host = endpoint.substr(start, endpoint.rfind(':') - start);
  const std::string* key = &b->jwt_key;
  ASSIGN_OR_RETURN(slurm::Release release,
                   app::EnvironmentRelease(paths.state_dir, api::ClusterEnvironment(b->cluster)));
  b->rest = std::make_unique<slurm::RestClient>(
      host, b->cluster.spec.rest_port, "slurm",
      [key] {
        int64_t now = jwt::UnixNow();
        return jwt::Sign({"slurm", now, now + 600}, *key);
      },
      release.RestApiPath());
  return b;
}

}  // namespace hpc::bench
