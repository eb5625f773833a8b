// `hpcplane server backup FILE` and `hpcplane server restore FILE [--force]`: the control plane's
// store kept and brought back with its engine's own tools (server/store_backup.h).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

#include "cli/support.h"

namespace hpc::cli {

// Adds `backup` and `restore` under `server`, whose own --store (`server_store`, which must
// outlive the function returned) they use unless given theirs; the returned function runs
// whichever was parsed (-1: neither).
std::function<int()> AddStoreCommands(CLI::App* server, const std::string* server_store, Globals& g);

}  // namespace hpc::cli
