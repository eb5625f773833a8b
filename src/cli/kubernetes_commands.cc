#include "cli/kubernetes_commands.h"

#include <iostream>

#include "api/crd.h"
#include "app/kubernetes_render.h"
#include "cli/support.h"

namespace hpc::cli {

std::function<int()> AddKubernetesCommands(CLI::App& app) {
  auto* crds = app.add_subcommand(
      "crds", "Print the CustomResourceDefinitions of hpcplane.io/v1alpha1 (for kubectl apply -f -)");
  auto* render = app.add_subcommand(
      "render", "Print every Kubernetes object the operator creates for a manifest (for review and GitOps)");
  static std::string file;
  static app::RenderOptions options;
  render->add_option("-f,--file", file, "SlurmCluster and NodeSet manifest")->required();
  render->add_option("--namespace", options.namespace_name,
                     "namespace of the objects (default: the SlurmCluster's metadata.namespace, else default)");
  render->add_option("--image", options.image, "the Slurm image every container runs")->capture_default_str();
  render->add_option("--storage-class", options.storage_class,
                     "storageClassName of the PersistentVolumeClaims (default: the cluster's default class)");
  return [crds, render]() -> int {
    if (crds->parsed()) {
      std::cout << api::CustomResourceDefinitionsYaml();
      return 0;
    }
    if (render->parsed()) {
      auto m = LoadManifest(file, std::nullopt);
      if (!m.ok()) return Fail(m.status());
      auto out = app::RenderKubernetes(*m, options);
      if (!out.ok()) return Fail(out.status());
      std::cout << *out;
      return 0;
    }
    return -1;
  };
}

}  // namespace hpc::cli
