#include "cli/environment_commands.h"

#include <ctime>
#include <iostream>

#include <fmt/format.h>

#include "api/codec.h"
#include "api/environments.h"
#include "app/environments.h"
#include "common/files.h"
#include "common/printable.h"
#include "operator/store.h"

namespace hpc::cli {
namespace {

using runtime::local::ImageManifest;

std::string ImageRelease(const ImageManifest& m) {
  auto r = app::ImageSlurmRelease(m);
  return r ? r->ToString() : "-";
}

std::string BuiltAt(int64_t unix_seconds) {
  std::time_t t = unix_seconds;
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M", std::gmtime(&t));
  return buf;
}

int CmdBuildEnvironment(const Globals& g, const std::string& name, const std::string& file, bool rebuild) {
  if (name.empty() == file.empty()) return Fail(Status::Error("environments build: give NAME or -f FILE"));
  Result<api::Environment> env = Status::Ok();
  if (!file.empty()) {
    auto text = files::ReadAtMost(file, api::kMaxManifestBytes);
    if (!text.ok()) return Fail(text.status());
    env = api::DecodeEnvironment(*text, file);
  } else {
    env = app::FindEnvironment(g.state_dir, name);
  }
  if (!env.ok()) return Fail(env.status());
  auto m = app::BuildEnvironment(g.state_dir, *env, rebuild,
                                 [](const std::string& line) { std::cout << Printable(line) << std::endl; });
  if (!m.ok()) return Fail(m.status());
  std::cout << m->Reference() << " (Slurm " << ImageRelease(*m) << ")\n";
  return 0;
}

int CmdListEnvironments(const Globals& g, const std::string& format) {
  auto built = runtime::local::ImageStore(app::ImageStoreDir(g.state_dir)).List();
  if (!built.ok()) return Fail(built.status());
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : *built) {
      out.push_back({{"name", m.name},
                     {"image", m.Reference()},
                     {"slurm", ImageRelease(m)},
                     {"suite", m.recipe.value("suite", "")},
                     {"sizeBytes", m.size_bytes},
                     {"builtAt", m.built_at}});
    }
    std::cout << out.dump(2) << "\n";
    return 0;
  }
  std::cout << fmt::format("{:<20} {:<10} {:<10} {:<14} {:>8}  {}\n", "NAME", "SUITE", "SLURM", "DIGEST", "SIZE",
                           "BUILT");
  for (const auto& m : *built) {
    std::cout << fmt::format("{:<20} {:<10} {:<10} {:<14} {:>6}Mi  {}\n", m.name, m.recipe.value("suite", ""),
                             ImageRelease(m), m.digest.substr(0, 12), m.size_bytes >> 20, BuiltAt(m.built_at));
  }
  for (const auto& e : api::BuiltinEnvironments()) {
    bool present = std::any_of(built->begin(), built->end(), [&](const auto& m) { return m.name == e.metadata.name; });
    if (!present)
      std::cout << fmt::format("{:<20} {:<10} {:<10} (built in, not built yet)\n", e.metadata.name, e.spec.suite, "-");
  }
  return 0;
}

int CmdDescribeEnvironment(const Globals& g, const std::string& name) {
  auto m = runtime::local::ImageStore(app::ImageStoreDir(g.state_dir)).Find(name);
  if (!m.ok()) return Fail(m.status());
  if (!*m) {
    return Fail(Status::NotFound(fmt::format("environment \"{}\" is not built (`hpcplane environments build {}`)",
                                             Printable(name), Printable(name))));
  }
  const ImageManifest& x = **m;
  std::cout << "Name:      " << x.name << "\n"
            << "Image:     " << x.Reference() << "\n"
            << "Suite:     " << x.recipe.value("suite", "") << "\n"
            << "Purpose:   " << x.recipe.value("annotations", nlohmann::json::object()).value("purpose", "") << "\n"
            << "Slurm:     " << ImageRelease(x) << "\n"
            << "Built:     " << BuiltAt(x.built_at) << " UTC\n"
            << "Size:      " << (x.size_bytes >> 20) << " MiB\n"
            << "Packages:  " << x.packages.size() << "\n";
  for (const auto& [p, v] : x.packages) std::cout << "  " << p << " " << v << "\n";
  return 0;
}

int CmdExportEnvironment(const Globals& g, const std::string& name, const std::string& layout, const std::string& tag,
                         const std::string& target) {
  auto e =
      app::ExportEnvironment(g.state_dir, name, layout, tag,
                             target == "kubernetes" ? app::ExportTarget::kKubernetes : app::ExportTarget::kContainerd,
                             [](const std::string& line) { std::cout << Printable(line) << std::endl; });
  if (!e.ok()) return Fail(e.status());
  std::cout << fmt::format("{}:{} {}{}\n", layout, e->tag, e->manifest_digest, e->reused ? " (unchanged)" : "");
  return 0;
}

// Who runs an environment here: a cluster's daemons, a nodeset's workers or a workspace's login
// pod; "" when none.
std::string EnvironmentUser(const Globals& g, const std::string& name) {
  for (const auto& cluster : ListStoredClusters(g.state_dir)) {
    op::Store store(op::ClusterPaths{g.state_dir, cluster}.Dir());
    auto c = store.LoadCluster();
    if (!c.ok()) continue;
    if (api::ClusterEnvironment(*c) == name) return fmt::format("cluster \"{}\"", cluster);
    for (const auto& ns : store.LoadNodeSets().value_or(std::vector<api::NodeSet>{})) {
      if (api::WorkerEnvironment(ns, *c) == name) {
        return fmt::format("nodeset \"{}\" of cluster \"{}\"", ns.metadata.name, cluster);
      }
    }
    for (const auto& w : store.LoadWorkspaces().value_or(std::vector<api::Workspace>{})) {
      if (api::WorkspaceEnvironment(w, *c) == name) {
        return fmt::format("workspace \"{}\" of cluster \"{}\"", w.metadata.name, cluster);
      }
    }
  }
  return "";
}

int CmdDeleteEnvironment(const Globals& g, const std::string& name) {
  if (std::string user = EnvironmentUser(g, name); !user.empty()) {
    return Fail(Status::FailedPrecondition(
        fmt::format("environment \"{}\" is in use by {}: delete or stop that first", name, user)));
  }
  Status s = runtime::local::ImageStore(app::ImageStoreDir(g.state_dir)).Delete(name);
  if (!s.ok()) return Fail(s);
  std::cout << "environment \"" << name << "\" deleted\n";
  return 0;
}

}  // namespace

std::function<int()> AddEnvironmentCommands(CLI::App& app, const Globals& g) {
  auto* envs = app.add_subcommand("environments", "Build and list the compute environments (images) pods run from");
  envs->require_subcommand(1);
  static std::string name, file, format = "table", layout, tag, target = "containerd";
  static bool rebuild = false;
  auto* build = envs->add_subcommand("build", "Build an environment's image (a built-in by NAME, or -f FILE)");
  build->add_option("name", name, "a built-in (slurm-26.05, workspace-26.05, ...) or one built before from a file");
  build->add_option("-f,--file", file, "Environment manifest (YAML or JSON)")->check(CLI::ExistingFile);
  build->add_flag("--rebuild", rebuild, "Build even when nothing changed (newer packages from the archive)");
  auto* list = envs->add_subcommand("list", "List the environments built here and the built-in ones");
  list->add_option("-o,--output", format, "table | json")->check(CLI::IsMember({"table", "json"}));
  auto* describe = envs->add_subcommand("describe", "Show an environment's image and every package's version");
  describe->add_option("name", name, "Its name")->required();
  auto* exp = envs->add_subcommand("export",
                                   "Pack an environment's image as an OCI image (umoci) for containerd and Kubernetes");
  exp->add_option("name", name, "Its name")->required();
  exp->add_option("--oci-layout", layout, "OCI image layout directory (made when missing)")->required();
  exp->add_option("--tag", tag, "Tag in the layout (default: the environment's name)");
  exp->add_option("--for", target,
                  "containerd: the image as built; kubernetes: for hpcplane's Kubernetes pods (/etc/passwd and "
                  "/etc/group from the cluster's users ConfigMap, the daemons' spool directories)")
      ->check(CLI::IsMember({"containerd", "kubernetes"}))
      ->capture_default_str();
  auto* del = envs->add_subcommand("delete", "Delete an environment's image (refused while a pod uses it)");
  del->add_option("name", name, "Its name")->required();
  return [&g, build, list, describe, exp, del]() -> int {
    if (build->parsed()) return CmdBuildEnvironment(g, name, file, rebuild);
    if (list->parsed()) return CmdListEnvironments(g, format);
    if (describe->parsed()) return CmdDescribeEnvironment(g, name);
    if (exp->parsed()) return CmdExportEnvironment(g, name, layout, tag, target);
    if (del->parsed()) return CmdDeleteEnvironment(g, name);
    return -1;
  };
}

}  // namespace hpc::cli
