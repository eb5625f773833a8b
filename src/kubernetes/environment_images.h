// Compute environments on Kubernetes: an environment is an image reference there (the image
// `hpcplane environments export NAME --for kubernetes` makes, pushed to the admin's registry or
// imported into the nodes). The operator reads which images it may run from a file (the chart's
// ConfigMap) and resolves each cluster's environments against it; an environment it has no image
// for is refused with the field that names it, never replaced by another image.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "api/types.h"
#include "common/result.h"
#include "slurm/release.h"

namespace hpc::kube {

struct EnvironmentImage {
  std::string image;       // a pullable reference: registry/name:tag or …@sha256:…
  slurm::Release release;  // the Slurm it carries (the export labels it hpcplane.io/slurm)
};
using EnvironmentImages = std::map<std::string, EnvironmentImage>;  // by environment name

// The operator's `--environments` file, YAML, one entry per environment:
//   slurm-26.05:     {image: registry.example/hpcplane/slurm:26.05, slurm: "26.05"}
//   workspace-26.05: {image: registry.example/hpcplane/workspace:26.05, slurm: "26.05"}
// Each name an environment name, each image non-empty and each release a Slurm release; an
// unknown key is an error (a misspelt `slrum:` would otherwise pass unnoticed).
Result<EnvironmentImages> ParseEnvironmentImages(const std::string& yaml_text, const std::string& where);
Result<EnvironmentImages> LoadEnvironmentImages(const std::string& path);

// What one cluster's pods run.
struct ClusterImages {
  std::string image;       // the cluster's environment's: its daemons, login pod and workers
  slurm::Release release;  // that image's Slurm: every pod of the cluster speaks its series
  // Environment name -> image, for every environment of that series (op::BuildInputs::images):
  // nodesets and workspaces may run any of them, and none of another series.
  std::map<std::string, std::string> by_environment;
  // Image -> its Slurm release, for every image of the table whatever its series: pods still on
  // the release before a rolling upgrade are told by it (op::BuildInputs::environment_releases).
  std::map<std::string, slurm::Release> releases;
  bool operator==(const ClusterImages&) const = default;
};

// The table with the operator's own image (`--image`, `--slurm-release`) as the built-in cluster
// environment of its release (slurm-26.05 for 26.05) where the table has no entry of that name:
// naming the environment the operator runs anyway is no error.
EnvironmentImages WithOperatorImage(const EnvironmentImages& table, const EnvironmentImage& fallback);

// The cluster's environment (spec.environment; when empty, the default environment's entry, else
// the operator's own `fallback` image) resolved against `table` (WithOperatorImage). A named
// environment without an entry: InvalidArgument("spec.environment", …) naming those there are.
Result<ClusterImages> ResolveClusterImages(const api::SlurmCluster& c, const EnvironmentImages& table,
                                           const EnvironmentImage& fallback);

// A nodeset's or workspace's environment (api::WorkerEnvironment, api::WorkspaceEnvironment)
// checked against what its cluster resolved to: InvalidArgument("spec.environment", …) when
// there is no image of the cluster's series for it.
Status CheckEnvironment(const std::string& name, const ClusterImages& images, const EnvironmentImages& table,
                        const EnvironmentImage& fallback);

}  // namespace hpc::kube
