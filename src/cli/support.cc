#include "cli/support.h"

#include <iostream>
#include <set>
#include <vector>

#include "api/validation.h"
#include "app/runtime_factory.h"
#include "common/files.h"
#include "common/printable.h"
#include "embedded_cluster.h"
#include "operator/store.h"

namespace hpc::cli {

int ExitCodeFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 0;
    case StatusCode::kUnavailable:
      return kExitUnavailable;
    case StatusCode::kUnauthenticated:
    case StatusCode::kPermissionDenied:
      return kExitNoPermission;
    case StatusCode::kInternal:
      return kExitInternal;
    case StatusCode::kUnknown:
    case StatusCode::kInvalidArgument:
    case StatusCode::kNotFound:
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
    case StatusCode::kFailedPrecondition:
      return kExitFailed;
  }
  return kExitFailed;
}

int Fail(const Status& s) {
  // Messages echo names and values from users: never a raw control character to the terminal.
  std::cerr << "error: " << PrintableLines(s.message()) << "\n";
  return ExitCodeFor(s.code());
}

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// The cluster a command is about: --cluster, else the only one in the state dir.
std::vector<std::string> ListStoredClusters(const std::string& state_dir) {
  std::vector<std::string> names;
  for (const auto& n : files::ListDir(state_dir + "/clusters")) {
    if (files::Exists(state_dir + "/clusters/" + n + "/cluster.json")) names.push_back(n);
  }
  return names;
}

Result<op::ClusterPaths> ResolveCluster(const Globals& g) {
  if (!g.cluster.empty()) {
    op::ClusterPaths p{g.state_dir, g.cluster};
    if (!files::Exists(p.Dir() + "/cluster.json")) {
      return Status::Errorf("cluster \"{}\" not found in {} (run `hpcplane up` first)", g.cluster, g.state_dir);
    }
    return p;
  }
  std::vector<std::string> names = ListStoredClusters(g.state_dir);
  if (names.empty()) return Status::Errorf("no cluster in {} (run `hpcplane up` first)", g.state_dir);
  if (names.size() > 1) {
    std::string all;
    for (const auto& n : names) all += (all.empty() ? "" : ", ") + n;
    return Status::Errorf("several clusters in {} ({}): choose one with --cluster", g.state_dir, all);
  }
  return op::ClusterPaths{g.state_dir, names[0]};
}

Result<std::unique_ptr<runtime::PodRuntime>> ClientRuntime(const Globals& g, const op::ClusterPaths& p) {
  return app::OpenClientRuntime(p, g.self_exe);
}

// Decodes a manifest and checks it as a whole: nodesets belong to the cluster given or stored.
Result<api::Manifest> LoadManifest(const std::string& file, const std::optional<api::SlurmCluster>& stored) {
  api::Manifest m;
  if (file.empty()) {
    ASSIGN_OR_RETURN(m, api::DecodeManifest(kEmbeddedClusterYaml, "embedded examples/cluster.yaml"));
  } else {
    ASSIGN_OR_RETURN(m, api::DecodeManifestFile(file));
  }
  if (m.clusters.size() > 1) return Status::Errorf("{}: one SlurmCluster per file", file);
  const api::SlurmCluster* cluster = !m.clusters.empty() ? &m.clusters[0] : stored ? &*stored : nullptr;
  std::set<std::string> seen;
  for (auto& ns : m.nodesets) {
    if (!cluster) return Status::Errorf("nodeset \"{}\": no SlurmCluster given or running", ns.metadata.name);
    if (ns.spec.cluster.empty()) ns.spec.cluster = cluster->metadata.name;
    if (ns.spec.cluster != cluster->metadata.name) {
      return Status::Errorf("nodeset \"{}\": spec.cluster: must be \"{}\" (got \"{}\")", ns.metadata.name,
                            cluster->metadata.name, ns.spec.cluster);
    }
    if (!seen.insert(ns.metadata.name).second) {
      return Status::Errorf("nodeset \"{}\": defined twice", ns.metadata.name);
    }
    RETURN_IF_ERROR(api::ValidateAgainstCluster(ns, *cluster));
  }
  return m;
}

}  // namespace hpc::cli
