#include "cli/kubernetes_commands.h"

#include <iostream>

#include "api/crd.h"

namespace hpc::cli {

std::function<int()> AddKubernetesCommands(CLI::App& app) {
  auto* crds = app.add_subcommand(
      "crds", "Print the CustomResourceDefinitions of hpcplane.io/v1alpha1 (for kubectl apply -f -)");
  return [crds]() -> int {
    if (crds->parsed()) {
      std::cout << api::CustomResourceDefinitionsYaml();
      return 0;
    }
    return -1;
  };
}

}  // namespace hpc::cli
