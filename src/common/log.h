// Logging setup: spdlog to stderr (CLI) or to a file (daemon). Secrets are never logged.
#pragma once

#include <string>

#include <spdlog/spdlog.h>

namespace hpc::log {

void InitConsole(bool verbose);
// A long-running service on the console (the Kubernetes operator, whose stderr is its pod's
// log): timestamps, and at least what it decides (info).
void UseServiceFormat();
void InitFile(const std::string& path, bool verbose);

}  // namespace hpc::log
