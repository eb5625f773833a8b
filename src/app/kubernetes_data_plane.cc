#include "app/kubernetes_data_plane.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "api/validation.h"
#include "app/data_plane_commands.h"
#include "common/files.h"
#include "kubernetes/kubernetes_store.h"
#include "operator/builders.h"
#include "operator/workspace.h"
#include "operator/workspace_request.h"
#include "platform/catalog.h"

namespace hpc::app {

namespace k8s = runtime::kubernetes;
using nlohmann::json;

namespace {

k8s::ObjectContext ContextOf(const KubernetesDataPlaneOptions& o) {
  k8s::ObjectContext ctx;
  ctx.namespace_name = o.namespace_name;
  ctx.cluster = o.cluster;
  return ctx;
}

}  // namespace

Result<std::unique_ptr<KubernetesDataPlane>> KubernetesDataPlane::Open(KubernetesDataPlaneOptions options) {
  if (options.namespace_name.empty())
    return Status::InvalidArgument("namespace", "the SlurmCluster's namespace is required");
  if (options.cluster.empty()) return Status::InvalidArgument("cluster", "the SlurmCluster's name is required");
  auto conn = options.kubeconfig.empty() ? k8s::InClusterConnection() : k8s::LoadKubeconfig(options.kubeconfig);
  if (!conn.ok()) return conn.status();
  RETURN_IF_ERROR(files::MakeDirs(options.state_dir, 0700));
  auto api = std::make_shared<k8s::ApiClient>(*conn);
  return std::unique_ptr<KubernetesDataPlane>(new KubernetesDataPlane(std::move(options), std::move(api)));
}

KubernetesDataPlane::KubernetesDataPlane(KubernetesDataPlaneOptions options, std::shared_ptr<k8s::ApiClient> api)
    : options_(std::move(options)), api_(api), runtime_(api, ContextOf(options_)) {}

std::string KubernetesDataPlane::ResourcePath(const std::string& plural, const std::string& name) const {
  std::string p = fmt::format("{}/namespaces/{}/{}", kube::kCustomResourcePath, options_.namespace_name, plural);
  return name.empty() ? p : p + "/" + name;
}

Result<api::SlurmCluster> KubernetesDataPlane::LoadCluster() {
  ASSIGN_OR_RETURN(json cr, api_->Get(ResourcePath("slurmclusters", options_.cluster)));
  ASSIGN_OR_RETURN(api::Manifest m, kube::DecodeCustomResource(kube::WithKind(cr, "slurmclusters")));
  api::SlurmCluster c = m.clusters.at(0);
  c.metadata.namespace_ = options_.namespace_name;
  c.status = api::ClusterStatusFromJson(cr.value("status", json::object()));
  return c;
}

cp::DataPlaneAccess::Health KubernetesDataPlane::CheckHealth() {
  Health h;
  auto c = LoadCluster();
  if (!c.ok()) {
    h.reasons.push_back(
        fmt::format("SlurmCluster {}/{}: {}", options_.namespace_name, options_.cluster, c.status().message()));
    return h;
  }
  return HealthOf(*c);
}

Result<std::vector<cp::LiveNodeSet>> KubernetesDataPlane::NodeSets() {
  std::vector<cp::LiveNodeSet> out;
  auto add = [&](const std::string& name, const api::NodeSetStatus& s) {
    out.push_back({name, s.desired, s.replicas, s.busy, s.idle, s.draining});
  };
  ASSIGN_OR_RETURN(json nodesets, api_->Get(ResourcePath("nodesets")));
  for (const auto& item : nodesets.value("items", json::array())) {
    if (item.value("spec", json::object()).value("cluster", "") != options_.cluster) continue;
    add(item["metadata"].value("name", ""), api::NodeSetStatusFromJson(item.value("status", json::object())));
  }
  // A workspace's nodeset is no resource of its own: its status is the workspace's.
  ASSIGN_OR_RETURN(json workspaces, api_->Get(ResourcePath("workspaces")));
  for (const auto& item : workspaces.value("items", json::array())) {
    if (item.value("spec", json::object()).value("cluster", "") != options_.cluster) continue;
    const json status = item.value("status", json::object());
    if (status.contains("nodeset"))
      add(item["metadata"].value("name", ""), api::NodeSetStatusFromJson(status["nodeset"]));
  }
  return out;
}

Result<std::optional<api::Workspace>> KubernetesDataPlane::FindWorkspace(const std::string& id) {
  if (id.empty()) return std::optional<api::Workspace>();
  if (Status s = api::ValidateResourceName(id); !s.ok()) return Status::Errorf("workspace id: {}", s.message());
  auto item = api_->Get(ResourcePath("workspaces", id));
  if (!item.ok() && item.status().code() == StatusCode::kNotFound) return std::optional<api::Workspace>();
  if (!item.ok()) return item.status();
  // Another SlurmCluster's in the same namespace is neither this data plane's nor the agent's.
  const std::string cluster = item->value("spec", json::object()).value("cluster", "");
  if (cluster != options_.cluster) {
    return Status::Conflict(fmt::format("a Workspace {}/{} exists for SlurmCluster {}, not {}", options_.namespace_name,
                                        id, cluster, options_.cluster));
  }
  const json meta = item->value("metadata", json::object());
  const bool ours = meta.value("labels", json::object()).value(kLabelDispatched, "") == "agent";
  if (item->value("status", json::object()).value("phase", "") == "Stopped" && ours) {
    // Everything it had is gone (the operator says so): the resource is the agent's to delete,
    // and the workspace is no longer here.
    Status s = api_->Delete(ResourcePath("workspaces", id));
    if (!s.ok() && s.code() != StatusCode::kNotFound) return s;
    return std::optional<api::Workspace>();
  }
  ASSIGN_OR_RETURN(api::Workspace w, kube::DecodeWorkspaceResource(*item, options_.namespace_name));
  if (meta.contains("deletionTimestamp")) w.spec.stopping = true;
  return std::optional<api::Workspace>(std::move(w));
}

Status KubernetesDataPlane::CreateWorkspace(const cp::WorkspaceCreation& c) {
  platform::Catalog catalog(options_.state_dir);
  RETURN_IF_ERROR(catalog.EnsureUser(c.user, c.uid, c.admin));
  const op::WorkspaceRequest r = WorkspaceRequestFor(c);
  ASSIGN_OR_RETURN(api::SlurmCluster cluster, LoadCluster());
  // Where a tier's pod fits is the scheduler's to decide on Kubernetes: no local capacity check.
  ASSIGN_OR_RETURN(api::Workspace w, op::BuildWorkspace(cluster, catalog, r, std::nullopt));
  // A dataset keeps the group the cluster's other workspaces give it: the agent's catalog is
  // not kept across its restarts, the Workspace resources are.
  ASSIGN_OR_RETURN(json others, api_->Get(ResourcePath("workspaces")));
  for (const auto& item : others.value("items", json::array())) {
    if (item.value("spec", json::object()).value("cluster", "") != options_.cluster) continue;
    const json groups = item.value("spec", json::object()).value("datasetGroups", json::object());
    for (auto& [dataset, gid] : w.spec.dataset_gids) {
      if (groups.contains(dataset) && groups[dataset].is_number_integer()) gid = groups[dataset].get<int64_t>();
    }
  }
  json resource = op::WorkspaceSpecJson(w);
  resource["metadata"] = {{"name", w.metadata.name},
                          {"namespace", options_.namespace_name},
                          {"labels", {{kLabelDispatched, "agent"}, {"app.kubernetes.io/managed-by", "hpcplane"}}}};
  auto created = api_->Post(ResourcePath("workspaces"), resource);
  if (!created.ok() && created.status().code() == StatusCode::kAlreadyExists) {
    return Status::AlreadyExists(fmt::format("a Workspace {}/{} already exists", options_.namespace_name, c.id));
  }
  return created.status();
}

Status KubernetesDataPlane::StopWorkspace(const std::string& id, bool cancel_jobs) {
  // Only this cluster's (FindWorkspace says so first; the agent stops what it found).
  ASSIGN_OR_RETURN(auto found, FindWorkspace(id));
  if (!found) return Status::NotFound(fmt::format("no Workspace {}/{}", options_.namespace_name, id));
  json spec = {{"stopping", true}};
  if (cancel_jobs) spec["cancelJobs"] = true;
  return api_->MergePatch(ResourcePath("workspaces", id), json{{"spec", spec}}).status();
}

Result<std::string> KubernetesDataPlane::InController(const std::vector<std::string>& argv) {
  // Its pods' names follow from the cluster's name: no read of the SlurmCluster for each command.
  return InControllerPod(&runtime_, options_.cluster, argv);
}

Result<ProcessResult> KubernetesDataPlane::InWorkspace(const api::Workspace& w, const std::vector<std::string>& argv,
                                                       const std::string& stdin_data) {
  runtime::ExecOptions o = WorkspaceCommand(w, argv);
  o.stdin_data = stdin_data;
  return runtime_.Exec(op::WorkspaceLoginPodName(w), o);
}

Result<PtyProcess> KubernetesDataPlane::Attach(const k8s::PodExecRequest& request, bool tty, int cols, int rows) {
  // The credentials stay in the kubeconfig or the ServiceAccount's files: never on a command line.
  std::vector<std::string> argv = {options_.self_exe, "kube-attach", "--namespace", request.namespace_name,
                                   "--pod",           request.pod,   "--container", request.container};
  if (!options_.kubeconfig.empty()) argv.insert(argv.end(), {"--kubeconfig", options_.kubeconfig});
  if (tty) argv.push_back("--tty");
  argv.push_back("--");
  argv.insert(argv.end(), request.argv.begin(), request.argv.end());
  return SpawnOnPty(argv, cols, rows);
}

Result<PtyProcess> KubernetesDataPlane::StartShell(const api::Workspace& w, int cols, int rows) {
  ASSIGN_OR_RETURN(k8s::PodExecRequest request, runtime_.ExecRequest(op::WorkspaceLoginPodName(w), WorkspaceShell(w)));
  return Attach(request, /*tty=*/true, cols, rows);
}

Result<cp::LabProcess> KubernetesDataPlane::StartLab(const api::Workspace& w, const cp::LabLaunch& launch) {
  ASSIGN_OR_RETURN(auto found, InWorkspace(w, kFindJupyterLab, ""));
  if (!found.ok()) return NoJupyterLab(w);
  const std::string pod = op::WorkspaceLoginPodName(w);
  ASSIGN_OR_RETURN(auto pods, runtime_.ListPods({{op::kLabelCluster, options_.cluster}}));
  std::string ip;
  for (const auto& p : pods)
    if (p.name == pod && p.phase == runtime::PodPhase::kRunning) ip = p.ip;
  if (ip.empty()) {
    return Status::FailedPrecondition(fmt::format("workspace {}'s login pod is not running", w.metadata.name));
  }
  ASSIGN_OR_RETURN(auto written, InWorkspace(w, LabTokenWriter(launch), launch.token));
  if (!written.ok()) return Status::Errorf("JupyterLab's token file in {}: {}", pod, written.err);
  ASSIGN_OR_RETURN(k8s::PodExecRequest request, runtime_.ExecRequest(pod, WorkspaceLab(w, launch, ip)));
  // On a terminal in the container: when the agent ends the attachment, the terminal's hangup
  // ends JupyterLab with it.
  ASSIGN_OR_RETURN(PtyProcess process, Attach(request, /*tty=*/true, 200, 50));
  return cp::LabProcess{process, ip, launch.port};
}

Result<std::vector<std::string>> KubernetesDataPlane::PodsForJobFiles(const std::string& node,
                                                                      const std::string& user) {
  ASSIGN_OR_RETURN(auto pods, runtime_.ListPods({{op::kLabelCluster, options_.cluster}}));
  return app::PodsForJobFiles(pods, node, user, [&](const std::string& workspace) {
    auto w = api_->Get(ResourcePath("workspaces", workspace));
    if (!w.ok()) return std::string();
    return w->value("spec", json::object()).value("user", json::object()).value("name", "");
  });
}

Result<ProcessResult> KubernetesDataPlane::AsUserInPod(const std::string& pod, const std::string& user,
                                                       const std::vector<std::string>& argv) {
  runtime::ExecOptions o;
  o.user = user;
  o.argv = argv;
  o.timeout = std::chrono::milliseconds(20000);
  // A workspace's login pod runs as the workspace's user: as that user, nothing is to change.
  ASSIGN_OR_RETURN(auto spec, runtime_.GetPodSpec(pod));
  if (spec && spec->labels.count(op::kLabelWorkspace)) {
    auto w = api_->Get(ResourcePath("workspaces", spec->labels.at(op::kLabelWorkspace)));
    const json owner = w.ok() ? w->value("spec", json::object()).value("user", json::object()) : json::object();
    if (owner.value("name", "") == user && owner.value("uid", int64_t{-1}) == spec->uid) o.uid = spec->uid;
  }
  return runtime_.Exec(pod, o);
}

}  // namespace hpc::app
