#include "operator/network_flows.h"

#include "operator/builders.h"
#include "slurm/config.h"

namespace hpc::op {

std::vector<runtime::NetworkPolicy> BuildNetworkPolicies(const api::SlurmCluster& c) {
  auto pods = [&](const std::string& component) -> runtime::LabelSelector {
    return {{kLabelCluster, c.metadata.name}, {kLabelComponent, component}};
  };
  const runtime::LabelSelector controller = pods("controller"), slurmdbd = pods("slurmdbd"), restapi = pods("restapi"),
                               login = pods("login"), workspace = pods("workspace-login"), worker = pods("worker");
  const std::vector<runtime::PortRange> all_tcp_but_tools = {{1, api::kToolPortFirst - 1},
                                                             {api::kToolPortLast + 1, 65535}};
  auto policy = [&](const std::string& component, std::vector<runtime::IngressRule> ingress) {
    return runtime::NetworkPolicy{c.metadata.name + "-" + component, pods(component), std::move(ingress)};
  };
  return {
      // Every Slurm client and daemon talks to slurmctld: any pod of the cluster (the benchmarks'
      // own Slurm pods too), to its port only.
      policy("controller", {{{{{kLabelCluster, c.metadata.name}}}, {slurm::kSlurmctldPort}}}),
      policy("slurmdbd", {{{controller, restapi, login, workspace, worker}, {slurm::kSlurmdbdPort}}}),
      policy("mariadb", {{{slurmdbd}, {slurm::kMariaDbPort}}}),
      policy("restapi", {{{login, workspace, worker}, {c.spec.rest_port}}}),
      policy("worker", {{{controller, login, workspace, worker}, {}}}),
      policy("login", {{{controller, worker}, all_tcp_but_tools}}),
      policy("workspace-login", {{{controller, worker}, all_tcp_but_tools}}),
      policy("munge", {}),
      policy("sackd", {}),
  };
}

}  // namespace hpc::op
