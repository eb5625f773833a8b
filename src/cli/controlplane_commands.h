// `hpcplane server`, `agent`, `tokens`, `jobs`, `dataplanes` and `flags`.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "cli/support.h"

namespace hpc::cli {

// Adds the subcommands; the returned function runs whichever was parsed (-1: none of these).
std::function<int()> AddControlPlaneCommands(CLI::App& app, Globals& g);

}  // namespace hpc::cli
