#include "kubernetes/kubernetes_render.h"

#include <map>

#include <fmt/format.h>

#include "api/environments.h"
#include "operator/cluster_reconciler.h"
#include "operator/conditions.h"
#include "operator/nodeset_reconciler.h"
#include "runtime/kubernetes/image_accounts.h"
#include "runtime/kubernetes/objects.h"

namespace hpc::kube {

namespace k8s = runtime::kubernetes;
using nlohmann::json;

namespace {

// Records what a reconciler applies and reports every pod running and ready at once, so a
// single pass walks every step of bring-up.
class RecordingRuntime : public runtime::PodRuntime {
 public:
  std::map<std::string, runtime::ConfigMap> config_maps;
  std::map<std::string, runtime::Secret> secrets;
  std::map<std::string, runtime::Volume> volumes;
  std::map<std::string, runtime::PodSpec> pods;
  std::map<std::string, runtime::NetworkPolicy> network_policies;

  Status ApplyNetworkPolicy(const runtime::NetworkPolicy& p) override {
    network_policies[p.name] = p;
    return Status::Ok();
  }
  Result<std::optional<runtime::NetworkPolicy>> GetNetworkPolicy(const std::string& name) override {
    auto it = network_policies.find(name);
    return it == network_policies.end() ? std::nullopt : std::optional(it->second);
  }
  Status DeleteNetworkPolicy(const std::string& name) override {
    network_policies.erase(name);
    return Status::Ok();
  }
  Status ApplyConfigMap(const runtime::ConfigMap& cm) override {
    config_maps[cm.name] = cm;
    return Status::Ok();
  }
  Result<std::optional<runtime::ConfigMap>> GetConfigMap(const std::string& name) override {
    auto it = config_maps.find(name);
    return it == config_maps.end() ? std::nullopt : std::optional(it->second);
  }
  Status DeleteConfigMap(const std::string& name) override {
    config_maps.erase(name);
    return Status::Ok();
  }
  Status ApplySecret(const runtime::Secret& s) override {
    secrets[s.name] = s;
    return Status::Ok();
  }
  Result<std::optional<runtime::Secret>> GetSecret(const std::string& name) override {
    auto it = secrets.find(name);
    return it == secrets.end() ? std::nullopt : std::optional(it->second);
  }
  Status DeleteSecret(const std::string& name) override {
    secrets.erase(name);
    return Status::Ok();
  }
  Status EnsureVolume(const runtime::Volume& v) override {
    volumes[v.name] = v;
    return Status::Ok();
  }
  Status CreatePod(const runtime::PodSpec& spec) override {
    pods[spec.name] = spec;
    return Status::Ok();
  }
  Status DeletePod(const std::string& name) override {
    pods.erase(name);
    return Status::Ok();
  }
  Status ForgetPod(const std::string& name) override { return DeletePod(name); }
  Result<std::vector<runtime::PodStatus>> ListPods(const std::map<std::string, std::string>& selector) override {
    std::vector<runtime::PodStatus> out;
    for (const auto& [name, spec] : pods) {
      bool match = true;
      for (const auto& [k, v] : selector) match = match && spec.labels.count(k) && spec.labels.at(k) == v;
      if (!match) continue;
      runtime::PodStatus st;
      st.name = name;
      st.labels = spec.labels;
      st.phase = runtime::PodPhase::kRunning;
      st.ready = true;
      st.resources = spec.resources;
      st.image = spec.image;
      out.push_back(std::move(st));
    }
    return out;
  }
  Result<std::optional<runtime::PodSpec>> GetPodSpec(const std::string& name) override {
    auto it = pods.find(name);
    return it == pods.end() ? std::nullopt : std::optional(it->second);
  }
  Result<ProcessResult> Exec(const std::string& pod, const runtime::ExecOptions&) override {
    return Status::Errorf("render: pod {} does not run", pod);
  }
  Result<int> ExecInteractive(const std::string& pod, const runtime::ExecOptions&) override {
    return Status::Errorf("render: pod {} does not run", pod);
  }
  Result<std::string> Logs(const std::string& pod, size_t) override {
    return Status::Errorf("render: pod {} does not run", pod);
  }
};

std::string PasswdLine(const k8s::ImageAccount& a) {
  return fmt::format("{}:x:{}:{}:{}:{}:/usr/sbin/nologin\n", a.name, a.uid, a.gid, a.name, a.home);
}

}  // namespace

k8s::ObjectContext ObjectContextFor(const RenderOptions& options, const std::string& namespace_name,
                                    const std::string& cluster) {
  k8s::ObjectContext ctx;
  ctx.namespace_name = namespace_name;
  ctx.cluster = cluster;
  ctx.image = options.image;
  ctx.storage_class = options.storage_class;
  ctx.shared_storage_class = options.shared_storage_class;
  ctx.cluster_domain = options.cluster_domain;
  return ctx;
}

op::BuildInputs KubernetesBuildInputs(const slurm::Release& release) {
  op::BuildInputs in;
  in.release = release;
  in.slurm = {k8s::kImageSlurm.uid, k8s::kImageSlurm.gid};
  in.munge = {k8s::kImageMunge.uid, k8s::kImageMunge.gid};
  in.mysql = {k8s::kImageMysql.uid, k8s::kImageMysql.gid};
  in.nobody = {k8s::kImageNobody.uid, k8s::kImageNobody.gid};
  in.host_passwd = "root:x:0:0:root:/root:/bin/bash\n";
  in.host_group = "root:x:0:\n";
  for (const auto& a : {k8s::kImageSlurm, k8s::kImageMunge, k8s::kImageMysql}) {
    in.host_passwd += PasswdLine(a);
    in.host_group += fmt::format("{}:x:{}:\n", a.name, a.gid);
  }
  in.host_passwd += PasswdLine(k8s::kImageNobody);
  in.host_group += fmt::format("nogroup:x:{}:\n", k8s::kImageNobody.gid);
  in.auth_sidecars = true;
  in.controller_config_pushed = true;
  in.users_from_directory = true;
  in.pods_may_unshare = false;
  in.exec_as_container_user = true;
  return in;
}

void UseClusterImages(const ClusterImages& images, op::BuildInputs* in, k8s::ObjectContext* ctx) {
  in->release = images.release;
  in->images = images.by_environment;
  in->environment_releases = images.releases;
  ctx->image = images.image;
  ctx->images.clear();
  for (const auto& [environment, image] : images.by_environment) ctx->images.insert(image);
}

Result<std::string> RenderKubernetes(const api::Manifest& m, const RenderOptions& options) {
  if (m.clusters.size() != 1) return Status::Error("render: the manifest must hold exactly one SlurmCluster");
  const api::SlurmCluster& c = m.clusters.front();
  // The environments as the operator resolves them: one without an image is refused, here too.
  auto images = ResolveClusterImages(c, options.environments, {options.image, options.release});
  if (!images.ok()) return images.status().WithContext(fmt::format("render: cluster {}", c.metadata.name));
  for (const auto& ns : m.nodesets) {
    RETURN_IF_ERROR(
        CheckEnvironment(api::WorkerEnvironment(ns, c), *images, options.environments, {options.image, options.release})
            .WithContext(fmt::format("render: nodeset {}", ns.metadata.name)));
  }
  k8s::ObjectContext ctx = ObjectContextFor(options,
                                            !options.namespace_name.empty()  ? options.namespace_name
                                            : !c.metadata.namespace_.empty() ? c.metadata.namespace_
                                                                             : "default",
                                            c.metadata.name);
  op::BuildInputs in = KubernetesBuildInputs(options.release);
  UseClusterImages(*images, &in, &ctx);

  RecordingRuntime rt;
  op::ClusterReconciler cluster(
      &rt, in, [](const std::string&, int) { return nullptr; }, nullptr);
  const api::SlurmClusterStatus status = cluster.Reconcile(c, m.nodesets);
  if (cluster.last_errors() > 0) {
    const api::Condition* ready = op::FindCondition(status.conditions, "Ready");
    return Status::Errorf("render: cluster {}: {}", c.metadata.name, ready ? ready->message : "a step failed");
  }
  // The workers each nodeset starts with, before any demand: what its reconciler creates first.
  for (const auto& ns : m.nodesets) {
    for (int ord = 0; ord < op::DesiredFromSpec(c, ns); ++ord) {
      RETURN_IF_ERROR(rt.CreatePod(op::BuildWorkerPod(c, ns, ord, in)));
    }
  }

  k8s::MountedObjects mounted;
  mounted.secrets = rt.secrets;
  mounted.volumes = rt.volumes;
  for (const auto& [name, cm] : rt.config_maps) mounted.config_map_modes[name] = cm.default_mode;

  std::vector<json> objects = {k8s::HostsServiceObject(ctx)};
  for (const auto& [name, cm] : rt.config_maps) objects.push_back(k8s::ConfigMapObject(cm, ctx));
  for (const auto& [name, s] : rt.secrets) objects.push_back(k8s::SecretObject(s, ctx, /*include_data=*/false));
  for (const auto& [name, v] : rt.volumes) objects.push_back(k8s::VolumeClaimObject(v, ctx));
  for (const auto& [name, p] : rt.network_policies) objects.push_back(k8s::NetworkPolicyObject(p, ctx));
  for (const auto& [name, spec] : rt.pods) {
    ASSIGN_OR_RETURN(json pod, k8s::PodObject(spec, mounted, ctx));
    objects.push_back(std::move(pod));
  }
  std::string out;
  for (const auto& o : objects) out += "---\n" + api::JsonToYaml(o);
  return out;
}

}  // namespace hpc::kube
