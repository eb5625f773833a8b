// The wiring layer: where the program is assembled. The per-cluster daemon (`hpcplane
// __daemon`) opens the local runtime, builds the cluster's controllers
// (operator/cluster_controllers.h), starts what `up` asked for beside them (the control plane's
// API and agent with --control-plane, the metrics endpoint with --metrics-listen) and runs the
// pass loop (operator/reconcile_pass.h) until told to stop; on SIGTERM/SIGINT it stops every pod
// and removes the network. Only this layer (and the CLI above
// it) may include both the operator and the control plane.
#pragma once

#include <string>

#include "operator/cluster_paths.h"

namespace hpc::app {

// Runs the daemon loop; returns the process exit code.
int RunDaemon(const op::ClusterPaths& p, const std::string& self_exe);

}  // namespace hpc::app
