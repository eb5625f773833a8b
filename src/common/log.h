// Logging setup: spdlog to stderr (CLI) or to a file (daemon). Secrets are never logged.
#pragma once

#include <string>

#include <spdlog/spdlog.h>

namespace hpc::log {

void InitConsole(bool verbose);
void InitFile(const std::string& path, bool verbose);

}  // namespace hpc::log
