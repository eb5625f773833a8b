#include "app/runtime_factory.h"

#include "app/environments.h"
#include "common/files.h"
#include "operator/store.h"
#include "runtime/local/network.h"
#include "runtime/local/pod_exec.h"
#include "runtime/local/pod_init.h"

namespace hpc::app {
namespace {

Result<std::unique_ptr<runtime::local::LocalRuntime>> OpenLocal(const op::ClusterPaths& p, const std::string& subnet,
                                                                const std::string& self_exe, bool supervise) {
  runtime::local::LocalRuntime::Options o;
  o.dir = p.RuntimeDir();
  o.cluster_key = p.NetworkKey();
  o.subnet = subnet;
  o.self_exe = self_exe;
  o.image_store = ImageStoreDir(p.state_dir);
  o.gpus = runtime::local::GpuHost::FromEnvironment();
  o.supervise = supervise;
  return runtime::local::LocalRuntime::Create(o);
}

// The subnet is part of the cluster's spec; it does not change while the cluster exists.
Result<std::unique_ptr<runtime::local::LocalRuntime>> OpenLocalForClient(const op::ClusterPaths& p,
                                                                         const std::string& self_exe) {
  op::Store store(p.Dir());
  ASSIGN_OR_RETURN(api::SlurmCluster c, store.LoadCluster());
  return OpenLocal(p, c.spec.subnet, self_exe, false);
}

}  // namespace

Result<std::unique_ptr<runtime::local::LocalRuntime>> OpenSupervisingRuntime(const op::ClusterPaths& p,
                                                                             const std::string& subnet,
                                                                             const std::string& self_exe) {
  return OpenLocal(p, subnet, self_exe, true);
}

Result<std::unique_ptr<runtime::PodRuntime>> OpenClientRuntime(const op::ClusterPaths& p, const std::string& self_exe) {
  ASSIGN_OR_RETURN(auto rt, OpenLocalForClient(p, self_exe));
  return std::unique_ptr<runtime::PodRuntime>(std::move(rt));
}

Status TeardownRuntime(const op::ClusterPaths& p, const std::string& self_exe) {
  auto rt = OpenLocalForClient(p, self_exe);
  // A runtime that cannot be opened (its cluster's spec is gone or unreadable) holds nothing
  // that `down` could reach through it.
  if (!rt.ok()) return Status::Ok();
  return (*rt)->Teardown();
}

Status CheckSubnetFree(const op::ClusterPaths& p, const std::string& cluster_name, const std::string& subnet) {
  auto parsed = runtime::local::ParseSubnet(subnet);
  if (!parsed.ok()) return parsed.status();
  auto names = runtime::local::NamesFor(p.NetworkKey());
  auto owner = runtime::local::Network::SubnetOwner(*parsed);
  if (owner.ok() && *owner && **owner != names.Bridge()) {
    return Status::Errorf("cluster \"{}\": spec.network.subnet: {} is already used by interface {}", cluster_name,
                          subnet, **owner);
  }
  return Status::Ok();
}

Status ResetSharedRoot(const op::ClusterPaths& p) {
  return files::RemoveAll(p.RuntimeDir() + "/volumes/" + op::kVolumeSharedRoot);
}

slurm::JobCgroups HostJobCgroups() {
  return runtime::local::DetectCgroupHierarchy() == runtime::local::CgroupHierarchy::kV1 ? slurm::JobCgroups::kV1
                                                                                         : slurm::JobCgroups::kNone;
}

int RunPodInit(const char* plan) { return runtime::local::RunPodInit(plan); }

int RunPodExec(int argc, char** argv) { return runtime::local::RunPodExec(argc, argv); }

}  // namespace hpc::app
