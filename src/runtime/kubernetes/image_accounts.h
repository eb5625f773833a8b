// The system accounts of the Slurm image (an environment exported for Kubernetes creates them
// with these ids before its packages install). On Kubernetes the pods' users come from the
// image, not from the host that runs the operator, so they are fixed numbers here.
#pragma once

#include <cstdint>

namespace hpc::runtime::kubernetes {

struct ImageAccount {
  const char* name;
  int64_t uid;
  int64_t gid;
  const char* home;
};

// Debian's slurm-wlm uses 64030 for slurm; munge and mysql are created before the packages are
// installed so that their ids do not depend on installation order.
inline constexpr ImageAccount kImageRoot = {"root", 0, 0, "/root"};
inline constexpr ImageAccount kImageSlurm = {"slurm", 64030, 64030, "/nonexistent"};
inline constexpr ImageAccount kImageMunge = {"munge", 64031, 64031, "/nonexistent"};
inline constexpr ImageAccount kImageMysql = {"mysql", 64032, 64032, "/nonexistent"};
inline constexpr ImageAccount kImageNobody = {"nobody", 65534, 65534, "/nonexistent"};

}  // namespace hpc::runtime::kubernetes
