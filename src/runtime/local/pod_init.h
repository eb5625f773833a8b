// The first process of a local pod. The runtime clones it into fresh PID, mount and UTS
// namespaces; it joins the pod's network namespace, builds the pod's file view from bind
// mounts, starts the pod's command as the pod's user and then acts as the pod's init:
// it forwards termination signals, reaps orphans, and exits with the command's status.
// Its exit ends every process left in the pod, since it is PID 1 of the pod's PID namespace.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::runtime::local {

struct LaunchMount {
  std::string source;  // host path
  std::string target;  // path inside the pod
  bool read_only = false;
};

// Everything pod-init needs, resolved to host paths by the runtime.
struct LaunchPlan {
  std::string hostname;
  std::string netns_path;
  std::vector<LaunchMount> mounts;
  std::vector<std::string> command;
  std::vector<std::string> env;  // KEY=VALUE
  int64_t uid = 0;
  int64_t gid = 0;
  std::string working_dir = "/";
};

nlohmann::json ToJson(const LaunchPlan& p);
Result<LaunchPlan> LaunchPlanFromJson(const nlohmann::json& j);

// Entry point of `hpcplane __pod-init PLAN_FILE`; returns the process exit code.
int RunPodInit(const std::string& plan_path);

}  // namespace hpc::runtime::local
