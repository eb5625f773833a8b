#include "api/defaults.h"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

namespace hpc::api {

std::string DefaultSubnetFor(const std::string& cluster_name) {
  // FNV-1a: stable across builds, unlike std::hash.
  uint32_t h = 2166136261u;
  for (unsigned char ch : cluster_name) h = (h ^ ch) * 16777619u;
  unsigned second = 192 + (h % 64);
  unsigned third = (h / 64) % 256;
  return fmt::format("10.{}.{}.0/24", second, third);
}

int HealthChecksSpec::MaxUnhealthy(int workers) const {
  if (max_unhealthy.empty()) return 0;
  if (max_unhealthy.back() != '%') return std::stoi(max_unhealthy);
  int64_t percent = std::stoll(max_unhealthy.substr(0, max_unhealthy.size() - 1));
  if (percent == 0 || workers == 0) return 0;
  // Rounded up and at least one: a one-worker nodeset can still drain its bad worker.
  return static_cast<int>(std::max<int64_t>(1, (percent * workers + 99) / 100));
}

void ApplyDefaults(SlurmCluster* c) {
  if (c->spec.subnet.empty()) c->spec.subnet = DefaultSubnetFor(c->metadata.name);
  for (auto& u : c->spec.users) {
    if (u.gid == 0) u.gid = u.uid;
  }
}

}  // namespace hpc::api
