#include "api/defaults.h"

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

void ApplyDefaults(SlurmCluster* c) {
  if (c->spec.subnet.empty()) c->spec.subnet = DefaultSubnetFor(c->metadata.name);
  for (auto& u : c->spec.users) {
    if (u.gid == 0) u.gid = u.uid;
  }
}

}  // namespace hpc::api
