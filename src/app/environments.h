// Compute environments on this machine: the built-in and saved Environments, their images in
// the local runtime's store, and what a cluster's pods run from.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "common/result.h"
#include "operator/builders.h"
#include "runtime/local/image_store.h"
#include "runtime/local/oci_export.h"

namespace hpc::app {

// Where images are kept: $HPCPLANE_IMAGE_STORE when set (several state dirs may share one, as
// the tests do), else <state>/images.
std::string ImageStoreDir(const std::string& state_dir);

// The recipe of an environment's image: its spec, with the base packages of its purpose.
runtime::local::ImageRecipe RecipeFor(const api::Environment& e);

// A built-in environment by name, or one built before from a file (its recipe is in the store).
Result<api::Environment> FindEnvironment(const std::string& state_dir, const std::string& name);

using Progress = std::function<void(const std::string&)>;
Result<runtime::local::ImageManifest> BuildEnvironment(const std::string& state_dir, const api::Environment& e,
                                                       bool rebuild, const Progress& progress);

// The Slurm release an image carries (its slurmctld's, else its slurm-client's version).
std::optional<slurm::Release> ImageSlurmRelease(const runtime::local::ImageManifest& m);

// The Slurm release of an environment built here.
Result<slurm::Release> EnvironmentRelease(const std::string& state_dir, const std::string& name);

// Builds (or reuses) the images of a cluster's environment and of its nodesets' own, and checks
// that every one carries the cluster's Slurm series.
Status EnsureClusterImages(const std::string& state_dir, const api::SlurmCluster& c,
                           const std::vector<api::NodeSet>& nodesets, const Progress& progress);

// Builds (or reuses) a workspace's environment and checks that its Slurm commands are the
// cluster's series; nothing to do for an empty name (the cluster's own environment).
Status EnsureWorkspaceImage(const std::string& state_dir, const api::SlurmCluster& c, const std::string& name,
                            const Progress& progress);

// Who runs an exported image: containerd (or any OCI runtime) as built, or hpcplane's
// Kubernetes pods (its /etc/passwd and /etc/group from the cluster's users, the spool directories).
enum class ExportTarget { kContainerd, kKubernetes };

// An environment built here as an OCI image in a layout directory, labelled with its Slurm
// release and target; reused when the tag already holds it for that target.
Result<runtime::local::OciExport> ExportEnvironment(const std::string& state_dir, const std::string& name,
                                                    const std::string& layout, const std::string& tag,
                                                    ExportTarget target, const Progress& progress);

// Fills `in->images` (every environment built in the store, pinned to its image now) and
// `in->release` (the cluster environment's Slurm). Fails when the cluster's is not built.
Status ResolveClusterImages(const std::string& state_dir, const api::SlurmCluster& c, op::BuildInputs* in);
// Holds every image `in` pins (ImageStore::Hold) for the daemon that will start pods from them,
// one holder directory per environment under `dir` (made afresh): a rebuild then removes none of
// them, though no pod of a nodeset at zero holds its image yet.
Status HoldResolvedImages(const std::string& state_dir, const std::string& dir, const op::BuildInputs& in);

}  // namespace hpc::app
