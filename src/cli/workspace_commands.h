// `hpcplane workspace ...`, `hpcplane users ...` and `hpcplane tiers ...`: subcommands are
// registered on the app and run after parsing.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "cli/support.h"

namespace hpc::cli {

// Adds the subcommands; the returned function runs whichever was parsed (-1: none of these).
std::function<int()> AddWorkspaceCommands(CLI::App& app, Globals& g);

}  // namespace hpc::cli
