#include "app/environments.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "api/codec.h"
#include "api/environments.h"
#include "common/files.h"
#include "runtime/kubernetes/image_accounts.h"

namespace hpc::app {
using runtime::local::ImageManifest;
using runtime::local::ImageStore;

std::string ImageStoreDir(const std::string& state_dir) {
  const char* shared = std::getenv("HPCPLANE_IMAGE_STORE");
  return shared && *shared ? std::string(shared) : state_dir + "/images";
}

runtime::local::ImageRecipe RecipeFor(const api::Environment& e) {
  runtime::local::ImageRecipe r;
  r.name = e.metadata.name;
  r.suite = e.spec.suite;
  r.packages = api::BasePackages(e.spec.purpose, e.spec.suite);
  r.packages.insert(r.packages.end(), e.spec.packages.begin(), e.spec.packages.end());
  for (const auto& f : api::BaseFiles(e.spec.purpose)) r.files.push_back({f.path, f.content, f.mode});
  for (const auto& f : e.spec.files) r.files.push_back({f.path, f.content, f.mode});
  r.post_install = e.spec.post_install;
  // munge's and MariaDB's accounts get the ids the Kubernetes runtime names them by (Debian
  // gives slurm its fixed 64030 itself); the local runtime brings its own /etc/passwd.
  for (const auto& a : {runtime::kubernetes::kImageMunge, runtime::kubernetes::kImageMysql}) {
    r.accounts.push_back({a.name, a.uid, a.gid, a.home, "/usr/sbin/nologin"});
  }
  // The Environment as written: `build NAME` rebuilds a saved one from it.
  r.annotations = {{"purpose", e.spec.purpose}, {"environment", api::ToJson(e)}};
  return r;
}

Result<api::Environment> FindEnvironment(const std::string& state_dir, const std::string& name) {
  RETURN_IF_ERROR(api::ValidateEnvironmentName(name).WithContext("environment"));
  if (auto builtin = api::FindBuiltinEnvironment(name)) return *builtin;
  ASSIGN_OR_RETURN(auto m, ImageStore(ImageStoreDir(state_dir)).Find(name));
  if (!m) {
    return Status::NotFound(fmt::format(
        "environment \"{}\" is neither built in nor built here (`hpcplane environments build -f FILE` builds one)",
        name));
  }
  const auto& ann = m->recipe.value("annotations", nlohmann::json::object());
  return api::DecodeEnvironment(ann.value("environment", nlohmann::json::object()).dump(),
                                "the image store's record of environment " + name);
}

Result<ImageManifest> BuildEnvironment(const std::string& state_dir, const api::Environment& e, bool rebuild,
                                       const Progress& progress) {
  RETURN_IF_ERROR(api::Validate(e));
  ImageStore::BuildOptions o;
  o.rebuild = rebuild;
  o.progress = progress;
  ASSIGN_OR_RETURN(ImageManifest m, ImageStore(ImageStoreDir(state_dir)).Build(RecipeFor(e), o));
  if (e.spec.purpose == api::kPurposeCluster && !ImageSlurmRelease(m)) {
    return Status::FailedPrecondition(
        fmt::format("environment \"{}\": its image holds no Slurm (no slurmctld package)", e.metadata.name));
  }
  return m;
}

std::optional<slurm::Release> ImageSlurmRelease(const ImageManifest& m) {
  for (const char* package : {"slurmctld", "slurm-client"}) {
    auto it = m.packages.find(package);
    if (it == m.packages.end()) continue;
    if (auto r = slurm::Release::Parse(it->second); r.ok()) return *r;
  }
  return std::nullopt;
}

Result<slurm::Release> EnvironmentRelease(const std::string& state_dir, const std::string& name) {
  ASSIGN_OR_RETURN(auto m, ImageStore(ImageStoreDir(state_dir)).Find(name));
  if (!m) return Status::NotFound(fmt::format("environment \"{}\" is not built here", name));
  auto release = ImageSlurmRelease(*m);
  if (!release) return Status::FailedPrecondition(fmt::format("environment \"{}\" holds no Slurm", name));
  return *release;
}

namespace {

// Every pod of a cluster speaks one Slurm series: its daemons' protocol and its commands'.
Status SameSlurmSeries(const std::string& whose, const std::string& name, const ImageManifest& m,
                       const api::SlurmCluster& c, const std::optional<slurm::Release>& cluster_release) {
  auto release = ImageSlurmRelease(m);
  if (release && cluster_release && release->Series() == cluster_release->Series()) return Status::Ok();
  return Status::InvalidArgument(
      "spec.environment",
      fmt::format("{}: environment \"{}\" carries Slurm {}, the cluster's \"{}\" Slurm {}: it must run the "
                  "cluster's release",
                  whose, name, release ? release->Series() : "none", api::ClusterEnvironment(c),
                  cluster_release ? cluster_release->Series() : "none"));
}

}  // namespace

Status EnsureClusterImages(const std::string& state_dir, const api::SlurmCluster& c,
                           const std::vector<api::NodeSet>& nodesets, const Progress& progress) {
  ASSIGN_OR_RETURN(api::Environment cluster_env, FindEnvironment(state_dir, api::ClusterEnvironment(c)));
  ASSIGN_OR_RETURN(ImageManifest cluster_image, BuildEnvironment(state_dir, cluster_env, false, progress));
  const std::optional<slurm::Release> cluster_release = ImageSlurmRelease(cluster_image);
  for (const auto& ns : nodesets) {
    const std::string name = api::WorkerEnvironment(ns, c);
    if (name == api::ClusterEnvironment(c)) continue;
    ASSIGN_OR_RETURN(api::Environment e, FindEnvironment(state_dir, name));
    ASSIGN_OR_RETURN(ImageManifest m, BuildEnvironment(state_dir, e, false, progress));
    RETURN_IF_ERROR(SameSlurmSeries(fmt::format("nodeset \"{}\"", ns.metadata.name), name, m, c, cluster_release));
  }
  return Status::Ok();
}

Status EnsureWorkspaceImage(const std::string& state_dir, const api::SlurmCluster& c, const std::string& name,
                            const Progress& progress) {
  if (name.empty() || name == api::ClusterEnvironment(c)) return Status::Ok();
  ASSIGN_OR_RETURN(api::Environment e, FindEnvironment(state_dir, name));
  ASSIGN_OR_RETURN(ImageManifest m, BuildEnvironment(state_dir, e, false, progress));
  ASSIGN_OR_RETURN(auto cluster_image, ImageStore(ImageStoreDir(state_dir)).Find(api::ClusterEnvironment(c)));
  const auto cluster_release = cluster_image ? ImageSlurmRelease(*cluster_image) : std::nullopt;
  return SameSlurmSeries("workspace", name, m, c, cluster_release);
}

namespace {

// What hpcplane's Kubernetes pods need of an image beyond the environment's packages: /etc/passwd and /etc/group are
// the cluster's users ConfigMap, mounted whole at /etc/hpcplane/users (a file of it mounted alone would never see a
// user added later; links into the mounted directory follow its updates), and the daemons'
// spool directories exist with their owners.
Status WriteKubernetesLayer(const std::string& dir) {
  namespace k8s = runtime::kubernetes;
  std::error_code ec;
  for (const char* d : {"/etc/hpcplane/users", "/var/spool/slurmctld", "/var/spool/slurmd", "/run/munge"}) {
    RETURN_IF_ERROR(files::MakeDirs(dir + d, 0755));
  }
  for (const char* f : {"passwd", "group"}) {
    std::filesystem::create_symlink(std::string("/etc/hpcplane/users/") + f, dir + "/etc/" + f, ec);
    if (ec) return Status::Errorf("kubernetes layer: /etc/{}: {}", f, ec.message());
  }
  for (const char* d : {"/var/spool/slurmctld", "/var/spool/slurmd"}) {
    if (::chown((dir + d).c_str(), k8s::kImageSlurm.uid, k8s::kImageSlurm.gid) != 0) {
      return Status::Errorf("kubernetes layer: chown {}: {}", d, std::strerror(errno));
    }
  }
  if (::chown((dir + "/run/munge").c_str(), k8s::kImageMunge.uid, k8s::kImageMunge.gid) != 0 ||
      ::chmod((dir + "/run/munge").c_str(), 0700) != 0) {
    return Status::Errorf("kubernetes layer: /run/munge: {}", std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

Result<runtime::local::OciExport> ExportEnvironment(const std::string& state_dir, const std::string& name,
                                                    const std::string& layout, const std::string& tag,
                                                    ExportTarget target, const Progress& progress) {
  RETURN_IF_ERROR(api::ValidateEnvironmentName(name).WithContext("environment"));
  ImageStore store(ImageStoreDir(state_dir));
  ASSIGN_OR_RETURN(auto m, store.Find(name));
  if (!m) {
    return Status::NotFound(
        fmt::format("environment \"{}\" is not built here (`hpcplane environments build {}`)", name, name));
  }
  runtime::local::OciExportOptions o;
  o.layout = layout;
  o.tag = tag;
  o.progress = progress;
  if (auto release = ImageSlurmRelease(*m)) o.labels["hpcplane.io/slurm"] = release->ToString();
  o.labels["hpcplane.io/suite"] = m->recipe.value("suite", "");
  o.labels["hpcplane.io/target"] = target == ExportTarget::kKubernetes ? "kubernetes" : "containerd";
  if (target != ExportTarget::kKubernetes) return runtime::local::ExportOci(store, *m, o);
  ASSIGN_OR_RETURN(o.extra_layer, files::MakeTempDir("hpcplane-kubernetes-layer"));
  Status written = WriteKubernetesLayer(o.extra_layer);
  auto out = written.ok() ? runtime::local::ExportOci(store, *m, o) : Result<runtime::local::OciExport>(written);
  (void)files::RemoveAll(o.extra_layer);
  return out;
}

Status HoldResolvedImages(const std::string& state_dir, const std::string& dir, const op::BuildInputs& in) {
  RETURN_IF_ERROR(files::RemoveAll(dir));  // an earlier daemon's holds: its pins are not ours
  ImageStore store(ImageStoreDir(state_dir));
  for (const auto& [name, reference] : in.images) {
    const std::string holder = dir + "/" + name;
    RETURN_IF_ERROR(files::MakeDirs(holder, 0755));
    RETURN_IF_ERROR(store.Hold(reference, holder).status().WithContext("environment " + name));
  }
  return Status::Ok();
}

Status ResolveClusterImages(const std::string& state_dir, const api::SlurmCluster& c, op::BuildInputs* in) {
  ImageStore store(ImageStoreDir(state_dir));
  ASSIGN_OR_RETURN(auto built, store.List());
  for (const auto& m : built) {
    in->images[m.name] = m.Reference();
    if (auto r = ImageSlurmRelease(m)) in->environment_releases[m.name] = *r;
  }
  const std::string name = api::ClusterEnvironment(c);
  auto it = std::find_if(built.begin(), built.end(), [&](const auto& m) { return m.name == name; });
  if (it == built.end()) {
    return Status::FailedPrecondition(
        fmt::format("cluster \"{}\": environment \"{}\" is not built in {} (`hpcplane environments build {}`)",
                    c.metadata.name, name, store.dir(), name));
  }
  auto release = ImageSlurmRelease(*it);
  if (!release) {
    return Status::FailedPrecondition(
        fmt::format("cluster \"{}\": environment \"{}\" holds no Slurm", c.metadata.name, name));
  }
  in->release = *release;
  if (auto munge = it->packages.find("munge"); munge != it->packages.end()) {
    in->munge_version = munge->second.substr(0, munge->second.find('-'));  // Debian's revision off
  }
  return Status::Ok();
}

}  // namespace hpc::app
