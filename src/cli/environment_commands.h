// `hpcplane environments build|list|describe|delete`: the compute environments (images) pods
// run from (app/environments.h).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "cli/support.h"

namespace hpc::cli {

// Adds the subcommands; the returned function runs whichever was parsed (-1: none of these).
std::function<int()> AddEnvironmentCommands(CLI::App& app, const Globals& g);

}  // namespace hpc::cli
