// An image of the store as an OCI image (an image layout directory), so that a container
// runtime (containerd, CRI-O, runc) and so Kubernetes run the very bits the local pods run: one
// build pipeline for both runtimes. Packed with umoci (Debian's `umoci`): the root file system
// as one layer, the store's digest and name as labels.
#pragma once

#include <functional>
#include <map>
#include <string>

#include "common/result.h"
#include "runtime/local/image_store.h"

namespace hpc::runtime::local {

// Labels an exported image carries; `hpcplane.io/image-digest` is the store's digest, by which
// an export that is already in the layout is recognised and not packed again.
inline constexpr const char* kOciLabelImageDigest = "hpcplane.io/image-digest";
inline constexpr const char* kOciLabelEnvironment = "hpcplane.io/environment";

struct OciExportOptions {
  std::string layout;                         // the OCI image layout directory (made when missing)
  std::string tag;                            // default: the image's name
  std::map<std::string, std::string> labels;  // more labels (e.g. the Slurm release)
  // A directory added over the image's root as a second layer (what a runtime needs changed in
  // the image); none when empty. Name it in a label: an export is reused only when the tag's
  // image has the same digest and every label of these options.
  std::string extra_layer;
  std::function<void(const std::string&)> progress;
};

struct OciExport {
  std::string tag;
  std::string manifest_digest;  // "sha256:..." of the OCI manifest the tag names
  bool reused = false;          // the layout already held this image under the tag
};

// Packs the image into the layout under the tag, replacing what the tag named before (its
// blobs that nothing else reaches are removed; blobs unreached before the export are left as
// they were). Nothing changes when the tag already names this image; a tag that names an image
// hpcplane did not export is refused.
Result<OciExport> ExportOci(const ImageStore& store, const ImageManifest& image, const OciExportOptions& options);

// The labels of the image a tag names in a layout; empty when the tag is not there.
Result<std::map<std::string, std::string>> OciLabels(const std::string& layout, const std::string& tag);

// The OCI manifest digest ("sha256:...") a tag names in a layout; "" when the tag is not there.
Result<std::string> OciManifestDigest(const std::string& layout, const std::string& tag);

}  // namespace hpc::runtime::local
