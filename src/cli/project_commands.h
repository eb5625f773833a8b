// `hpcplane projects`: a project's configuration on the control plane (admins), and launching,
// listing and stopping workspaces through it (project members). The control plane builds each
// workspace from the request and the project's configuration; the data plane's agent applies it.
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "cli/support.h"

namespace hpc::cli {

// Adds the subcommands; the returned function runs whichever was parsed (-1: none of these).
std::function<int()> AddProjectCommands(CLI::App& app);

}  // namespace hpc::cli
