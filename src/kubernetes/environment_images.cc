#include "kubernetes/environment_images.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "api/environments.h"
#include "common/files.h"

namespace hpc::kube {

namespace {

std::string Names(const EnvironmentImages& table) {
  std::string out;
  for (const auto& [name, e] : table) out += (out.empty() ? "" : ", ") + name;
  return out.empty() ? "none" : out;
}

// Why `name` cannot run with a cluster of `series`, for the field that names it.
std::string NoImage(const std::string& name, const std::string& series, const EnvironmentImages& table) {
  auto it = table.find(name);
  if (it != table.end()) {
    return fmt::format(
        "environment \"{}\" carries Slurm {}, the cluster runs Slurm {}: every pod of a cluster runs its "
        "release",
        name, it->second.release.Series(), series);
  }
  return fmt::format("environment \"{}\" has no image on this data plane (the operator's --environments lists: {})",
                     name, Names(table));
}

}  // namespace

Result<EnvironmentImages> ParseEnvironmentImages(const std::string& yaml_text, const std::string& where) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::Exception& e) {
    return Status::Errorf("{}: not YAML: {}", where, e.what());
  }
  EnvironmentImages out;
  if (root.IsNull()) return out;
  if (!root.IsMap()) return Status::Errorf("{}: must map environment names to {{image, slurm}}", where);
  for (const auto& entry : root) {
    const std::string name = entry.first.Scalar();
    const std::string at = fmt::format("{}: {}", where, name);
    if (Status s = api::ValidateEnvironmentName(name); !s.ok()) return Status::Errorf("{}: {}", at, s.message());
    if (!entry.second.IsMap()) return Status::Errorf("{}: must be {{image: REFERENCE, slurm: RELEASE}}", at);
    for (const auto& field : entry.second) {
      const std::string key = field.first.Scalar();
      if (key != "image" && key != "slurm") return Status::Errorf("{}: unknown field \"{}\" (image, slurm)", at, key);
      if (!field.second.IsScalar()) return Status::Errorf("{}.{}: must be a string", at, key);
    }
    EnvironmentImage e;
    e.image = entry.second["image"] ? entry.second["image"].Scalar() : "";
    if (e.image.empty() || e.image.find_first_of(" \t\n") != std::string::npos) {
      return Status::Errorf("{}.image: must be an image reference (registry/name:tag)", at);
    }
    if (!entry.second["slurm"]) return Status::Errorf("{}.slurm: the Slurm release the image carries is required", at);
    auto release = slurm::Release::Parse(entry.second["slurm"].Scalar());
    if (!release.ok()) return Status::Errorf("{}.slurm: {}", at, release.status().message());
    e.release = *release;
    out[name] = std::move(e);
  }
  return out;
}

Result<EnvironmentImages> LoadEnvironmentImages(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, files::Read(path));
  return ParseEnvironmentImages(text, path);
}

EnvironmentImages WithOperatorImage(const EnvironmentImages& table, const EnvironmentImage& fallback) {
  EnvironmentImages out = table;
  out.emplace("slurm-" + fallback.release.Series(), fallback);
  return out;
}

Result<ClusterImages> ResolveClusterImages(const api::SlurmCluster& c, const EnvironmentImages& given,
                                           const EnvironmentImage& fallback) {
  const EnvironmentImages table = WithOperatorImage(given, fallback);
  const std::string name = api::ClusterEnvironment(c);
  ClusterImages out;
  if (auto it = table.find(name); it != table.end()) {
    out.image = it->second.image;
    out.release = it->second.release;
  } else if (c.spec.environment.empty()) {
    out.image = fallback.image;
    out.release = fallback.release;
  } else {
    return Status::InvalidArgument("spec.environment", NoImage(name, "", table));
  }
  out.by_environment[name] = out.image;
  out.releases[out.image] = out.release;
  for (const auto& [other, e] : table) {
    if (e.release.Series() == out.release.Series()) out.by_environment.emplace(other, e.image);
    out.releases.emplace(e.image, e.release);
  }
  return out;
}

Status CheckEnvironment(const std::string& name, const ClusterImages& images, const EnvironmentImages& table,
                        const EnvironmentImage& fallback) {
  if (images.by_environment.count(name)) return Status::Ok();
  return Status::InvalidArgument("spec.environment",
                                 NoImage(name, images.release.Series(), WithOperatorImage(table, fallback)));
}

}  // namespace hpc::kube
