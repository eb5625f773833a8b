#include "runtime/local/pod_firewall.h"

#include <gtest/gtest.h>

#include "runtime/pod_spec_json.h"

namespace hpc::runtime::local {
namespace {

bool HasLine(const std::string& text, const std::string& line) {
  return ("\n" + text).find("\n" + line + "\n") != std::string::npos;
}

std::vector<FirewalledPod> Pods() {
  return {{"db", {{"role", "db"}}, "hpvX00001"},
          {"daemon", {{"role", "daemon"}}, "hpvX00002"},
          {"tenant", {{"role", "tenant"}}, "hpvX00003"},
          {"free", {{"role", "free"}}, "hpvX00004"}};
}

// A selected pod is isolated: only its rules' peers open connections to it, to their ports.
TEST(PodFirewallTest, SelectedPodsAcceptOnlyTheirRulesPeersOnTheirPorts) {
  std::vector<NetworkPolicy> policies = {
      {"db", {{"role", "db"}}, {{{{{"role", "daemon"}}}, {3306}}}},
      {"tenant", {{"role", "tenant"}}, {{{{{"role", "daemon"}}, {{"role", "tenant"}}}, {}}}},
      {"login", {{"role", "free"}}, {{{{{"role", "daemon"}}}, {{1, 18879}, 20000, {18900, 65535}}}}},
  };
  const std::string s = RenderPodFirewall("hpcplane_X", "hpvX", policies, Pods());
  // Port ranges as nftables ranges.
  EXPECT_TRUE(HasLine(
      s, "    oifname @policy2_pods iifname @policy2_rule0_from tcp dport { 1-18879, 20000, 18900-65535 } accept"))
      << s;
  // Replaced whole, in one transaction.
  EXPECT_EQ(s.rfind("add table bridge hpcplane_X\ndelete table bridge hpcplane_X\ntable bridge hpcplane_X {\n", 0), 0u)
      << s;
  EXPECT_NE(
      s.find("set isolated {\n    type ifname;\n    elements = { \"hpvX00001\", \"hpvX00003\", \"hpvX00004\" }\n  }"),
      std::string::npos)
      << s;
  EXPECT_NE(s.find("set policy0_rule0_from {\n    type ifname;\n    elements = { \"hpvX00002\" }\n  }"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("set policy1_rule0_from {\n    type ifname;\n    elements = { \"hpvX00002\", \"hpvX00003\" }\n  }"),
            std::string::npos)
      << s;
  EXPECT_TRUE(HasLine(s, "    oifname @policy0_pods iifname @policy0_rule0_from tcp dport { 3306 } accept")) << s;
  EXPECT_TRUE(HasLine(s, "    oifname @policy1_pods iifname @policy1_rule0_from accept")) << s;
  // Accepts come before the drops of new connections to isolated pods.
  EXPECT_LT(s.find("tcp dport { 3306 } accept"), s.find("oifname @isolated tcp flags & (syn | ack) == syn drop")) << s;
  EXPECT_TRUE(HasLine(s, "    oifname @isolated meta l4proto udp drop")) << s;
  // The host: no pod opens a connection to it, whatever the policies.
  EXPECT_TRUE(HasLine(s, "    iifname \"hpvX*\" tcp flags & (syn | ack) == syn drop")) << s;
  EXPECT_TRUE(HasLine(s, "    iifname \"hpvX*\" meta l4proto udp drop")) << s;
}

// A policy with no rules isolates its pods completely; a selector no pod matches leaves an empty
// set (valid nftables) rather than a rule that matches everyone.
TEST(PodFirewallTest, NoRulesIsolateCompletelyAndEmptySetsStayEmpty) {
  std::vector<NetworkPolicy> policies = {{"none", {{"role", "free"}}, {}},
                                         {"ghost", {{"role", "ghost"}}, {{{{{"role", "nobody"}}}, {1}}}}};
  const std::string s = RenderPodFirewall("t", "hpvX", policies, Pods());
  EXPECT_NE(s.find("set isolated {\n    type ifname;\n    elements = { \"hpvX00004\" }\n  }"), std::string::npos) << s;
  EXPECT_EQ(s.find("@policy0_rule"), std::string::npos) << s;
  EXPECT_NE(s.find("set policy1_pods {\n    type ifname;\n  }"), std::string::npos) << s;
  EXPECT_NE(s.find("set policy1_rule0_from {\n    type ifname;\n  }"), std::string::npos) << s;
}

// The runtime keeps each policy as JSON: ports and ranges read back as they were written, and a
// policy of an older runtime (ports as numbers only) still reads.
TEST(PodFirewallTest, StoredPoliciesReadBackTheirPortsAndRanges) {
  NetworkPolicy p{"login", {{"role", "free"}}, {{{{{"role", "daemon"}}}, {{1, 18879}, 6817, {18900, 65535}}}}};
  auto back = NetworkPolicyFromJson(NetworkPolicyJson(p));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(*back, p);
  auto older = NetworkPolicyFromJson(nlohmann::json::parse(
      R"({"name": "db", "podSelector": {"role": "db"}, "ingress": [{"from": [{"role": "daemon"}], "tcpPorts": [3306]}]})"));
  ASSERT_TRUE(older.ok()) << older.status().message();
  EXPECT_EQ(older->ingress.at(0).tcp_ports, std::vector<PortRange>{3306});
  EXPECT_FALSE(
      NetworkPolicyFromJson(
          nlohmann::json::parse(R"({"name": "x", "podSelector": {}, "ingress": [{"from": [], "tcpPorts": ["many"]}]})"))
          .ok());
}

}  // namespace
}  // namespace hpc::runtime::local
