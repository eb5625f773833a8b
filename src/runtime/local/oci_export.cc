#include "runtime/local/oci_export.h"

#include <unistd.h>

#include <algorithm>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/printable.h"
#include "common/subprocess.h"

namespace hpc::runtime::local {
namespace {

using nlohmann::json;

// OCI's reference names are free-form; ours are what a registry accepts as a tag.
Status CheckTag(const std::string& tag) {
  static const std::regex re("^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$");
  if (std::regex_match(tag, re)) return Status::Ok();
  return Status::InvalidArgument(
      "tag", fmt::format("must be 1-128 letters, digits, '_', '.' or '-', not starting with '.' or '-' (got \"{}\")",
                         Printable(tag)));
}

Result<json> ReadJson(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, files::Read(path));
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Errorf("{}: not JSON", path);
  return j;
}

std::string BlobPath(const std::string& layout, const std::string& digest) {
  return layout + "/blobs/" + (digest.rfind("sha256:", 0) == 0 ? "sha256/" + digest.substr(7) : digest);
}

Status Umoci(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"umoci"};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.timeout = std::chrono::minutes(30);
  auto r = RunProcess(argv, o);
  if (!r.ok()) {
    return Status::FailedPrecondition(
        fmt::format("umoci cannot be run ({}): install Debian's umoci", r.status().message()));
  }
  if (!r->ok()) return Status::Errorf("{}: exit {}: {}", JoinArgs(argv), r->exit_code, r->err);
  return Status::Ok();
}

// The blobs the layout's index reaches: its manifests (and nested indexes), their configs and
// layers. An unreadable manifest counts as reaching nothing more, never as a reason to delete.
std::set<std::string> ReachableBlobs(const std::string& layout) {
  std::set<std::string> reached;
  std::vector<json> pending;
  if (auto index = ReadJson(layout + "/index.json"); index.ok()) pending.push_back(*index);
  while (!pending.empty()) {
    json j = std::move(pending.back());
    pending.pop_back();
    std::vector<json> refs;
    for (const char* list : {"manifests", "layers"}) {
      if (j.contains(list) && j[list].is_array()) refs.insert(refs.end(), j[list].begin(), j[list].end());
    }
    if (j.contains("config") && j["config"].is_object()) refs.push_back(j["config"]);
    for (const auto& r : refs) {
      const std::string digest = r.is_object() ? r.value("digest", "") : "";
      if (digest.empty() || !reached.insert(digest).second) continue;
      const std::string type = r.value("mediaType", "");
      if (type.find("manifest") == std::string::npos && type.find("index") == std::string::npos) continue;
      if (auto child = ReadJson(BlobPath(layout, digest)); child.ok()) pending.push_back(*child);
    }
  }
  return reached;
}

// Blobs in the layout that its index does not reach: garbage, but only ours to remove when this
// export made it so (a layout may be shared with other tools).
std::set<std::string> UnreachedBlobs(const std::string& layout) {
  const std::set<std::string> reached = ReachableBlobs(layout);
  std::set<std::string> out;
  for (const auto& hex : files::ListDir(layout + "/blobs/sha256")) {
    if (!reached.count("sha256:" + hex)) out.insert("sha256:" + hex);
  }
  return out;
}

}  // namespace

Result<std::string> OciManifestDigest(const std::string& layout, const std::string& tag) {
  if (!files::Exists(layout + "/index.json")) return std::string();
  ASSIGN_OR_RETURN(json index, ReadJson(layout + "/index.json"));
  try {
    for (const auto& m : index.value("manifests", json::array())) {
      const json& ann = m.value("annotations", json::object());
      if (ann.value("org.opencontainers.image.ref.name", "") == tag) return m.at("digest").get<std::string>();
    }
  } catch (const json::exception& e) {
    return Status::Errorf("{}/index.json: {}", layout, e.what());
  }
  return std::string();
}

Result<std::map<std::string, std::string>> OciLabels(const std::string& layout, const std::string& tag) {
  ASSIGN_OR_RETURN(std::string manifest_digest, OciManifestDigest(layout, tag));
  if (manifest_digest.empty()) return std::map<std::string, std::string>{};
  ASSIGN_OR_RETURN(json manifest, ReadJson(BlobPath(layout, manifest_digest)));
  try {
    ASSIGN_OR_RETURN(json config, ReadJson(BlobPath(layout, manifest.at("config").at("digest").get<std::string>())));
    const json& labels = config.value("config", json::object()).value("Labels", json::object());
    return labels.is_object() ? labels.get<std::map<std::string, std::string>>() : std::map<std::string, std::string>{};
  } catch (const json::exception& e) {
    return Status::Errorf("OCI image {}:{}: {}", layout, tag, e.what());
  }
}

Result<OciExport> ExportOci(const ImageStore& store, const ImageManifest& image, const OciExportOptions& options) {
  auto say = [&](const std::string& line) {
    if (options.progress) options.progress(line);
  };
  OciExport out;
  out.tag = options.tag.empty() ? image.name : options.tag;
  RETURN_IF_ERROR(CheckTag(out.tag));
  if (options.layout.empty()) return Status::InvalidArgument("layout", "must name a directory");
  ASSIGN_OR_RETURN(std::string rootfs, store.RootOf(image.Reference()));

  if (files::Exists(options.layout) && !files::Exists(options.layout + "/oci-layout")) {
    if (!files::ListDir(options.layout).empty()) {
      return Status::FailedPrecondition(
          fmt::format("{} is neither empty nor an OCI image layout (no oci-layout file)", options.layout));
    }
    RETURN_IF_ERROR(files::RemoveAll(options.layout));
  }
  if (!files::Exists(options.layout)) RETURN_IF_ERROR(Umoci({"init", "--layout", options.layout}));

  ASSIGN_OR_RETURN(auto labels, OciLabels(options.layout, out.tag));
  ASSIGN_OR_RETURN(std::string tagged, OciManifestDigest(options.layout, out.tag));
  if (!tagged.empty() && !labels.count(kOciLabelImageDigest)) {
    return Status::FailedPrecondition(
        fmt::format("{}:{} names an image hpcplane did not export: choose another --tag", options.layout, out.tag));
  }
  const bool same_labels = std::all_of(options.labels.begin(), options.labels.end(), [&](const auto& kv) {
    auto it = labels.find(kv.first);
    return it != labels.end() && it->second == kv.second;
  });
  if (auto it = labels.find(kOciLabelImageDigest); it != labels.end() && it->second == image.digest && same_labels) {
    ASSIGN_OR_RETURN(out.manifest_digest, OciManifestDigest(options.layout, out.tag));
    out.reused = true;
    say(fmt::format("{}:{} already holds {}", options.layout, out.tag, image.Reference()));
    return out;
  }

  // Packed under a tag of its own, then named: the tag names the old image or the new one,
  // never half of one, and a failure leaves only collectable blobs.
  const std::set<std::string> garbage_before = UnreachedBlobs(options.layout);
  const std::string scratch = fmt::format("{}.hpcplane-export-{}", out.tag, ::getpid());
  const std::string ref = options.layout + ":" + scratch;
  auto packed = [&]() -> Status {
    RETURN_IF_ERROR(Umoci({"new", "--image", ref}));
    say(fmt::format("packing {} into {} (one layer)", image.Reference(), options.layout));
    RETURN_IF_ERROR(Umoci({"insert", "--image", ref, rootfs, "/"}));
    if (!options.extra_layer.empty()) RETURN_IF_ERROR(Umoci({"insert", "--image", ref, options.extra_layer, "/"}));
    std::vector<std::string> config = {"config",
                                       "--image",
                                       ref,
                                       "--author=hpcplane",
                                       "--config.env=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                       "--config.cmd=/bin/bash",
                                       "--config.label=org.opencontainers.image.title=" + image.name,
                                       fmt::format("--config.label={}={}", kOciLabelEnvironment, image.name),
                                       fmt::format("--config.label={}={}", kOciLabelImageDigest, image.digest)};
    for (const auto& [k, v] : options.labels) config.push_back(fmt::format("--config.label={}={}", k, v));
    RETURN_IF_ERROR(Umoci(config));
    return Umoci({"tag", "--image", ref, out.tag});
  }();
  (void)Umoci({"rm", "--image", ref});  // the scratch tag only; its blobs are collected below
  // What this export left unreached (the image the tag named before, a failed attempt's
  // blobs) goes; whatever was unreached before it is someone else's.
  Status collected = Status::Ok();
  for (const auto& digest : UnreachedBlobs(options.layout)) {
    if (garbage_before.count(digest)) continue;
    if (Status s = files::RemoveAll(BlobPath(options.layout, digest)); !s.ok() && collected.ok()) collected = s;
  }
  RETURN_IF_ERROR(packed);
  RETURN_IF_ERROR(collected);
  ASSIGN_OR_RETURN(out.manifest_digest, OciManifestDigest(options.layout, out.tag));
  say(fmt::format("{}:{} is {} ({})", options.layout, out.tag, image.Reference(), out.manifest_digest));
  return out;
}

}  // namespace hpc::runtime::local
