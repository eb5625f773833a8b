#include "operator/network_flows.h"

#include <gtest/gtest.h>

#include "operator/builders.h"

namespace hpc::op {
namespace {

const runtime::NetworkPolicy* Find(const std::vector<runtime::NetworkPolicy>& all, const std::string& name) {
  for (const auto& p : all) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

bool Allows(const runtime::NetworkPolicy& p, const std::string& component, int port) {
  for (const auto& rule : p.ingress) {
    bool port_ok = rule.tcp_ports.empty();
    for (const auto& allowed : rule.tcp_ports) port_ok = port_ok || allowed.Contains(port);
    for (const auto& from : rule.from) {
      if (from.count(kLabelComponent) && from.at(kLabelComponent) == component && port_ok) return true;
    }
  }
  return false;
}

// Tenants (workspace logins, jobs on workers) reach Slurm's daemons; only slurmdbd reaches
// MariaDB; every component is isolated, and every selector names this cluster.
TEST(NetworkFlowsTest, TenantsReachSlurmOnlyAndOnlySlurmdbdReachesTheDatabase) {
  api::SlurmCluster c;
  c.metadata.name = "c1";
  const auto policies = BuildNetworkPolicies(c);
  for (const char* component :
       {"controller", "slurmdbd", "mariadb", "restapi", "worker", "login", "workspace-login", "munge"}) {
    const auto* p = Find(policies, std::string("c1-") + component);
    ASSERT_NE(p, nullptr) << component;
    EXPECT_EQ(p->pod_selector.at(kLabelCluster), "c1");
    EXPECT_EQ(p->pod_selector.at(kLabelComponent), component);
    for (const auto& rule : p->ingress) {
      for (const auto& from : rule.from) EXPECT_EQ(from.at(kLabelCluster), "c1") << component;
    }
  }
  // Any pod of the cluster reaches slurmctld, on its port only.
  const auto& controller = *Find(policies, "c1-controller");
  ASSERT_EQ(controller.ingress.size(), 1u);
  const std::vector<runtime::LabelSelector> whole_cluster = {{{kLabelCluster, "c1"}}};
  EXPECT_EQ(controller.ingress[0].from, whole_cluster);
  EXPECT_EQ(controller.ingress[0].tcp_ports, std::vector<runtime::PortRange>{6817});
  const auto& mariadb = *Find(policies, "c1-mariadb");
  EXPECT_TRUE(Allows(mariadb, "slurmdbd", 3306));
  for (const char* tenant : {"workspace-login", "login", "worker", "controller", "restapi"}) {
    EXPECT_FALSE(Allows(mariadb, tenant, 3306)) << tenant;
  }
  for (const char* tenant : {"workspace-login", "worker"}) {
    EXPECT_TRUE(Allows(*Find(policies, "c1-slurmdbd"), tenant, 6819)) << tenant;  // sacct
    EXPECT_TRUE(Allows(*Find(policies, "c1-restapi"), tenant, c.spec.rest_port)) << tenant;
    EXPECT_TRUE(Allows(*Find(policies, "c1-worker"), tenant, 40000)) << tenant;  // srun's steps, MPI
  }
  // slurmctld and the steps call srun back on the login pods; tenants do not call each other.
  EXPECT_TRUE(Allows(*Find(policies, "c1-workspace-login"), "controller", 40000));
  EXPECT_TRUE(Allows(*Find(policies, "c1-workspace-login"), "worker", 40000));
  EXPECT_FALSE(Allows(*Find(policies, "c1-workspace-login"), "workspace-login", 40000));
  // A workspace's tools (JupyterLab) are the agent's to reach, and no pod's; every other port of
  // a login pod stays open to the cluster's workers (a Dask scheduler the jobs call back).
  for (const char* login : {"c1-workspace-login", "c1-login"}) {
    for (int port : {api::kToolPortFirst, 18888, api::kToolPortLast}) {
      for (const char* from : {"controller", "worker", "workspace-login", "login"}) {
        EXPECT_FALSE(Allows(*Find(policies, login), from, port)) << login << " " << from << " " << port;
      }
    }
    for (int port : {1, api::kToolPortFirst - 1, api::kToolPortLast + 1, 65535}) {
      EXPECT_TRUE(Allows(*Find(policies, login), "worker", port)) << login << " " << port;
    }
  }
  EXPECT_TRUE(Find(policies, "c1-munge")->ingress.empty());
}

}  // namespace
}  // namespace hpc::op
