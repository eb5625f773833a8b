#include "cli/support.h"

#include <iostream>
#include <vector>

#include "common/files.h"
#include "operator/store.h"

namespace hpc::cli {

int Fail(const Status& s) {
  std::cerr << "error: " << s.message() << "\n";
  return 1;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

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

Result<std::unique_ptr<runtime::local::LocalRuntime>> ClientRuntime(const Globals& g, const op::ClusterPaths& p) {
  op::Store store(p.Dir());
  ASSIGN_OR_RETURN(api::SlurmCluster c, store.LoadCluster());
  return op::OpenLocalRuntime(p, c.spec.subnet, g.self_exe, false);
}

}  // namespace hpc::cli
