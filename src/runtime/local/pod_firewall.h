// Network policies on the local runtime: one nftables table (family bridge) per cluster that
// filters what crosses the cluster's bridge. The host's kernel here has no connection tracking
// for bridged traffic, so the rules are stateless and filter who opens a connection: a TCP
// segment with SYN and without ACK to a pod that a policy isolates passes only from a pod a
// rule allows (to the rule's ports); replies, which never carry a lone SYN, always pass. UDP to
// isolated pods is dropped (nothing in a Slurm cluster uses it), as is IPv6 on the bridge (pods
// are IPv4 only). Pods open no connection to the host itself, nor through it to other networks
// (other clusters' bridges): what the host opens to pods (probes, the operator) is unaffected.
// Ports are matched by bridge port (each pod's host-side veth), which a pod cannot forge, not
// by address.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/result.h"
#include "runtime/pod_runtime.h"

namespace hpc::runtime::local {

struct FirewalledPod {
  std::string name;
  std::map<std::string, std::string> labels;
  std::string host_veth;
};

// The nftables script that replaces `table` (bridge family) atomically with the rules for these
// pods under these policies; `veth_prefix` names every host-side veth of the cluster.
std::string RenderPodFirewall(const std::string& table, const std::string& veth_prefix,
                              const std::vector<NetworkPolicy>& policies, const std::vector<FirewalledPod>& pods);

// Loads a script with `nft -f -` (one transaction: all of it or nothing).
Status LoadNftables(const std::string& script);
// Removes the table, if it exists.
Status DeleteNftablesTable(const std::string& table);

}  // namespace hpc::runtime::local
