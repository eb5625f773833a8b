#include "operator/cluster_controllers.h"

#include <spdlog/spdlog.h>

#include "slurm/rest_client.h"
#include "slurm/slurm_control.h"

namespace hpc::op {

Result<BuildInputs> InputsForRunningCluster(runtime::PodRuntime* rt, const BuildInputs& inputs,
                                            const std::string& cluster_name) {
  BuildInputs in = inputs;
  ASSIGN_OR_RETURN(auto pods, rt->ListPods({{kLabelCluster, cluster_name}}));
  if (pods.empty()) return in;  // starts with no pod: nothing running to keep as it is
  // Each environment's image as its pods run it ("NAME@sha256:..."): a newer hpcplane whose
  // recipes differ would otherwise replace every daemon's pod and start workers of another build.
  for (const auto& p : pods) {
    ASSIGN_OR_RETURN(auto spec, rt->GetPodSpec(p.name));
    if (!spec || spec->image.empty()) continue;
    const std::string environment = spec->image.substr(0, spec->image.find('@'));
    auto it = in.images.find(environment);
    if (it != in.images.end() && it->second != spec->image) {
      spdlog::info("cluster {}: environment {} stays at {} while the cluster runs (this hpcplane builds {})",
                   cluster_name, environment, spec->image, it->second);
      it->second = spec->image;
    }
  }
  if (UsesMunge(in)) return in;
  // Made with munge (its key, no Slurm key) and still running: it keeps munge (BuildInputs::keep_munge).
  ASSIGN_OR_RETURN(auto munge_key, rt->GetSecret(kSecretMunge));
  ASSIGN_OR_RETURN(auto slurm_key, rt->GetSecret(kSecretSlurmKey));
  if (!munge_key || slurm_key) return in;
  spdlog::info(
      "cluster {}: its pods run munge; it keeps munge until it next starts with no pod (down and up, or an "
      "upgrade), then authenticates with auth/slurm",
      cluster_name);
  in.keep_munge = true;
  return in;
}

Result<std::unique_ptr<ClusterControllers>> NewClusterControllers(runtime::PodRuntime* rt, const BuildInputs& inputs,
                                                                  const std::string& cluster_name,
                                                                  const std::string& ledger_path) {
  return NewClusterControllers(rt, inputs, cluster_name, LedgerStorage::File(ledger_path));
}

Result<std::unique_ptr<ClusterControllers>> NewClusterControllers(runtime::PodRuntime* rt, const BuildInputs& inputs,
                                                                  const std::string& cluster_name,
                                                                  LedgerStorage ledger_storage) {
  auto c = std::make_unique<ClusterControllers>();
  ASSIGN_OR_RETURN(BuildInputs in, InputsForRunningCluster(rt, inputs, cluster_name));
  ASSIGN_OR_RETURN(OwnershipLedger ledger, OwnershipLedger::Open(std::move(ledger_storage)));
  c->ledger = std::make_unique<OwnershipLedger>(std::move(ledger));
  c->rt = rt;
  api::SlurmCluster named;
  named.metadata.name = cluster_name;
  const std::string controller = ControllerPodName(named);
  c->tokens = std::make_unique<TokenSource>(rt);
  c->command_pod = std::make_unique<slurm::CommandPod>(controller);
  c->control = std::make_unique<slurm::ScontrolInPod>(rt, c->command_pod.get());
  TokenSource* tokens = c->tokens.get();
  c->cluster = std::make_unique<ClusterReconciler>(
      rt, in,
      [tokens, api = in.release.RestApiPath()](const std::string& host, int port) {
        return std::make_unique<slurm::RestClient>(
            host, port, "slurm", [tokens] { return tokens->Get(); }, api);
      },
      c->control.get());
  c->nodesets = std::make_unique<NodeSetReconciler>(rt, in, c->control.get());
  c->workspaces = std::make_unique<WorkspaceReconciler>(rt, in, c->control.get());
  c->cluster->SetCommandPod(c->command_pod.get());
  c->accounting = std::make_unique<AccountingSync>(rt, c->command_pod.get());
  return c;
}

}  // namespace hpc::op
