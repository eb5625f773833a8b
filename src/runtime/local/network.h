// Host networking for the local runtime: one Linux bridge per cluster with its own /24, and
// one persistent network namespace per pod joined to it by a veth pair. Names are short
// hashes so they fit IFNAMSIZ and two clusters never share one.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace hpc::runtime::local {

// Parsed "a.b.c.0/24".
struct Subnet {
  std::string prefix;  // "a.b.c"
  std::string Gateway() const { return prefix + ".1"; }
  std::string Address(int host) const { return prefix + "." + std::to_string(host); }
};
Result<Subnet> ParseSubnet(const std::string& cidr);
// A pod's MAC address, derived from its IPv4 address ("02:42:" and its four bytes): the same for
// every pod that holds the address in turn (Network::EnsurePod says why).
std::string PodMac(const std::string& ip);

// Stable names for one cluster's network objects, derived from a cluster key.
struct NetworkNames {
  std::string key;  // 6 hex digits
  std::string Bridge() const { return "hpb" + key; }
  std::string NetnsPrefix() const { return "hpc-" + key + "-"; }
  std::string Netns(const std::string& pod) const { return NetnsPrefix() + pod; }
  std::string HostVethPrefix() const { return "hpv" + key; }
  std::string HostVeth(const std::string& pod) const;
};
NetworkNames NamesFor(const std::string& cluster_key_material);

// Lowest free host number in 2..254 not in `taken`, or an error when the subnet is full.
Result<int> AllocateHost(const std::vector<int>& taken);

class Network {
 public:
  Network(NetworkNames names, Subnet subnet) : names_(std::move(names)), subnet_(std::move(subnet)) {}

  const NetworkNames& names() const { return names_; }
  const Subnet& subnet() const { return subnet_; }

  /** Creates the bridge with the gateway address, unless it exists; its route ACKs at once. */
  Status EnsureBridge();
  /** Creates the pod's namespace and veth with two `ip -batch` runs, unless they exist; its
   *  routes ACK at once. */
  Status EnsurePod(const std::string& pod, const std::string& ip);
  Status DeletePod(const std::string& pod);
  /** Removes every namespace and link of this cluster, including ones a crash left behind. */
  Status DeleteAll();

  static std::string NetnsPath(const std::string& netns) { return "/run/netns/" + netns; }
  /** Another cluster's bridge already holding this subnet's gateway address, if any. */
  static Result<std::optional<std::string>> SubnetOwner(const Subnet& subnet);

 private:
  // The subnet's route on `dev` with source `src`, and a pod's two routes, as `ip` commands.
  std::string QuickAckRoute(const std::string& dev, const std::string& src) const;
  std::vector<std::string> PodRoutes(const std::string& ip) const;

  NetworkNames names_;
  Subnet subnet_;
  bool bridge_checked_ = false;
};

}  // namespace hpc::runtime::local
