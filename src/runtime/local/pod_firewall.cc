#include "runtime/local/pod_firewall.h"

#include <set>
#include <sstream>

#include <fmt/format.h>

#include "common/subprocess.h"

namespace hpc::runtime::local {

namespace {

bool Selects(const LabelSelector& selector, const std::map<std::string, std::string>& labels) {
  for (const auto& [k, v] : selector) {
    auto it = labels.find(k);
    if (it == labels.end() || it->second != v) return false;
  }
  return true;
}

std::set<std::string> VethsSelected(const std::vector<LabelSelector>& selectors,
                                    const std::vector<FirewalledPod>& pods) {
  std::set<std::string> out;
  for (const auto& p : pods) {
    for (const auto& s : selectors) {
      if (Selects(s, p.labels)) out.insert(p.host_veth);
    }
  }
  return out;
}

void WriteSet(std::ostringstream& o, const std::string& name, const std::set<std::string>& veths) {
  o << "  set " << name << " {\n    type ifname;\n";
  if (!veths.empty()) {
    o << "    elements = { ";
    bool first = true;
    for (const auto& v : veths) {
      o << (first ? "" : ", ") << '"' << v << '"';
      first = false;
    }
    o << " }\n";
  }
  o << "  }\n";
}

}  // namespace

std::string RenderPodFirewall(const std::string& table, const std::string& veth_prefix,
                              const std::vector<NetworkPolicy>& policies, const std::vector<FirewalledPod>& pods) {
  std::ostringstream sets, forward;
  std::set<std::string> isolated;
  for (size_t i = 0; i < policies.size(); ++i) {
    const NetworkPolicy& p = policies[i];
    const std::string selected = fmt::format("policy{}_pods", i);
    const std::set<std::string> veths = VethsSelected({p.pod_selector}, pods);
    isolated.insert(veths.begin(), veths.end());
    sets << "  # policy " << p.name << "\n";
    WriteSet(sets, selected, veths);
    for (size_t r = 0; r < p.ingress.size(); ++r) {
      const IngressRule& rule = p.ingress[r];
      const std::string from = fmt::format("policy{}_rule{}_from", i, r);
      WriteSet(sets, from, VethsSelected(rule.from, pods));
      forward << "    oifname @" << selected << " iifname @" << from;
      if (!rule.tcp_ports.empty()) {
        forward << " tcp dport { ";
        for (size_t k = 0; k < rule.tcp_ports.size(); ++k) {
          const PortRange& ports = rule.tcp_ports[k];
          forward << (k ? ", " : "") << ports.first;
          if (ports.last != ports.first) forward << "-" << ports.last;
        }
        forward << " }";
      }
      forward << " accept\n";
    }
  }
  std::ostringstream o;
  // Declaring, deleting and redefining the table in one script replaces it in one transaction.
  o << "add table bridge " << table << "\n"
    << "delete table bridge " << table << "\n"
    << "table bridge " << table << " {\n";
  WriteSet(o, "isolated", isolated);
  o << sets.str() << "  chain forward {\n"
    << "    type filter hook forward priority 0; policy accept;\n"
    << "    iifname \"" << veth_prefix << "*\" ether type ip6 drop\n"
    << forward.str() << "    oifname @isolated tcp flags & (syn | ack) == syn drop\n"
    << "    oifname @isolated meta l4proto udp drop\n"
    << "  }\n"
    << "  chain input {\n"
    << "    type filter hook input priority 0; policy accept;\n"
    << "    iifname \"" << veth_prefix << "*\" ether type ip6 drop\n"
    << "    iifname \"" << veth_prefix << "*\" tcp flags & (syn | ack) == syn drop\n"
    << "    iifname \"" << veth_prefix << "*\" meta l4proto udp drop\n"
    << "  }\n"
    << "}\n";
  return o.str();
}

Status LoadNftables(const std::string& script) {
  RunOptions ro;
  ro.stdin_data = script;
  ro.timeout = std::chrono::seconds(20);
  auto r = RunProcess({"nft", "-f", "-"}, ro);
  if (!r.ok()) return Status::Errorf("nftables: {} (is the nftables package installed?)", r.status().message());
  if (r->exit_code != 0) return Status::Errorf("nftables: nft -f failed: {}", r->err);
  return Status::Ok();
}

Status DeleteNftablesTable(const std::string& table) {
  auto listed = RunProcess({"nft", "list", "table", "bridge", table});
  if (!listed.ok() || listed->exit_code != 0) return Status::Ok();  // no nft, or no such table
  auto r = RunProcess({"nft", "delete", "table", "bridge", table});
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) return Status::Errorf("nftables: delete table bridge {}: {}", table, r->err);
  return Status::Ok();
}

}  // namespace hpc::runtime::local
