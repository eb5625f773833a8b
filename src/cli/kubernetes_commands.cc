#include "cli/kubernetes_commands.h"

#include <iostream>

#include "api/crd.h"
#include "cli/support.h"
#include "kubernetes/attach.h"
#include "kubernetes/kubernetes_operator.h"
#include "kubernetes/kubernetes_render.h"

namespace hpc::cli {

namespace {

// The flags `render` and `operator` share for what pods run: the image of a cluster that names
// no environment, the Slurm release it carries, and the environments' images table. Given as
// text, parsed into the options by Apply once the command line is read.
struct ImageFlags {
  std::string release = kube::RenderOptions{}.release.Series();
  std::string environments_file;

  void Add(CLI::App* cmd, kube::RenderOptions* options) {
    cmd->add_option("--image", options->image, "the Slurm image of a cluster that names no environment")
        ->capture_default_str();
    cmd->add_option("--slurm-release", release, "the Slurm release that image carries (e.g. 26.05)")
        ->capture_default_str();
    cmd->add_option("--environments", environments_file,
                    "YAML file of the environments' images: NAME: {image: REF, slurm: RELEASE}; a resource naming "
                    "an environment without one is refused");
  }

  Status Apply(kube::RenderOptions* options) const {
    auto parsed = slurm::Release::Parse(release);
    if (!parsed.ok()) return parsed.status().WithContext("--slurm-release");
    options->release = *parsed;
    if (environments_file.empty()) return Status::Ok();
    auto environments = kube::LoadEnvironmentImages(environments_file);
    if (!environments.ok()) return environments.status().WithContext("--environments");
    options->environments = std::move(*environments);
    return Status::Ok();
  }
};

}  // namespace

std::function<int()> AddKubernetesCommands(CLI::App& app) {
  auto* crds = app.add_subcommand(
      "crds", "Print the CustomResourceDefinitions of hpcplane.io/v1alpha1 (for kubectl apply -f -)");
  auto* render = app.add_subcommand(
      "render", "Print every Kubernetes object the operator creates for a manifest (for review and GitOps)");
  static std::string file;
  static kube::RenderOptions options;
  render->add_option("-f,--file", file, "SlurmCluster and NodeSet manifest")->required();
  render->add_option("--namespace", options.namespace_name,
                     "namespace of the objects (default: the SlurmCluster's metadata.namespace, else default)");
  static ImageFlags render_images;
  render_images.Add(render, &options);
  render->add_option("--storage-class", options.storage_class,
                     "storageClassName of the ReadWriteOnce claims (default: the cluster's default class)");
  render->add_option("--shared-storage-class", options.shared_storage_class,
                     "storageClassName of the ReadWriteMany claims: datasets, shared roots, the controllers' state "
                     "with a backup (default: the default class)");
  render->add_option("--cluster-domain", options.cluster_domain, "the cluster's DNS domain")->capture_default_str();
  auto* operator_cmd = app.add_subcommand(
      "operator", "Run the operator against a Kubernetes API: SlurmClusters and NodeSets of one namespace");
  static kube::OperatorOptions op_options;
  static int lease_seconds = 15;
  operator_cmd->add_option("--kubeconfig", op_options.kubeconfig,
                           "kubeconfig file (default: the pod's service account, in-cluster)");
  operator_cmd->add_option("--namespace", op_options.namespace_name,
                           "reconcile the SlurmClusters of this namespace only (default: every namespace)");
  operator_cmd->add_option("--lease-namespace", op_options.lease_namespace,
                           "namespace of the leader Lease (default: the kubeconfig context's or the pod's)");
  operator_cmd->add_option("--identity", op_options.identity, "this replica's name in the leader Lease");
  static ImageFlags operator_images;
  operator_images.Add(operator_cmd, &op_options.objects);
  operator_cmd->add_option("--storage-class", op_options.objects.storage_class,
                           "storageClassName of the ReadWriteOnce claims it creates (default: the default class)");
  operator_cmd->add_option("--shared-storage-class", op_options.objects.shared_storage_class,
                           "storageClassName of the ReadWriteMany claims it creates: datasets, shared roots, the "
                           "controllers' state with a backup "
                           "(a network file system's class; default: the default class)");
  operator_cmd->add_option("--cluster-domain", op_options.objects.cluster_domain, "the cluster's DNS domain")
      ->capture_default_str();
  operator_cmd->add_option("--state-dir", op_options.state_dir, "where it records what it owns in Slurm")
      ->capture_default_str();
  operator_cmd->add_option("--lease-seconds", lease_seconds, "leader Lease duration")
      ->check(CLI::Range(3, 300))
      ->capture_default_str();
  operator_cmd->add_option("--workers", op_options.workers, "SlurmClusters reconciled at the same time")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  // What the agent on Kubernetes runs on a pseudo-terminal of its own for a terminal in the
  // browser or JupyterLab (app/kubernetes_data_plane.h): not for people, so not in --help.
  auto* attach = app.add_subcommand("kube-attach", "Run a command in a pod attached to this terminal (pods/exec)");
  attach->group("");
  static kube::AttachOptions attach_request;
  attach->add_option("--kubeconfig", attach_request.kubeconfig, "kubeconfig file (default: the pod's service account)");
  attach->add_option("--namespace", attach_request.namespace_name, "the pod's namespace")->required();
  attach->add_option("--pod", attach_request.pod, "the pod")->required();
  attach->add_option("--container", attach_request.container, "its container")->required();
  attach->add_flag("--tty", attach_request.tty, "a terminal in the container, its size following this one's");
  attach->add_option("command", attach_request.argv, "the command and its arguments (after --)")->required();
  return [crds, render, operator_cmd, attach]() -> int {
    if (attach->parsed()) {
      auto code = kube::AttachToPod(attach_request);
      if (!code.ok()) return Fail(code.status());
      return *code;
    }
    if (operator_cmd->parsed()) {
      if (Status s = operator_images.Apply(&op_options.objects); !s.ok()) return Fail(s);
      op_options.lease_duration = std::chrono::seconds(lease_seconds);
      return kube::RunOperator(op_options);
    }
    if (crds->parsed()) {
      std::cout << api::CustomResourceDefinitionsYaml();
      return 0;
    }
    if (render->parsed()) {
      if (Status s = render_images.Apply(&options); !s.ok()) return Fail(s);
      auto m = LoadManifest(file, std::nullopt);
      if (!m.ok()) return Fail(m.status());
      auto out = kube::RenderKubernetes(*m, options);
      if (!out.ok()) return Fail(out.status());
      std::cout << *out;
      return 0;
    }
    return -1;
  };
}

}  // namespace hpc::cli
