// Commands for running hpcplane on Kubernetes: `hpcplane crds` prints the CustomResourceDefinitions
// (deploy/kubernetes/crds.yaml is its output).
#pragma once

#include <functional>

#include <CLI/CLI.hpp>

namespace hpc::cli {

// Adds the subcommands; the returned function runs whichever was parsed (-1: none of these).
std::function<int()> AddKubernetesCommands(CLI::App& app);

}  // namespace hpc::cli
