#include "runtime/local/network.h"

#include <net/if.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <regex>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/subprocess.h"

namespace hpc::runtime::local {
namespace {

uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) h = (h ^ c) * 16777619u;
  return h;
}

Status Ip(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"ip"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunChecked(argv);
}

// Runs `lines` as one `ip -batch` (in namespace `ns` unless empty), stopping at the first that
// fails: one process instead of one per command, the bulk of a pod's network setup time.
Status IpBatch(const std::string& ns, const std::vector<std::string>& lines) {
  std::vector<std::string> argv = {"ip"};
  if (!ns.empty()) argv.insert(argv.end(), {"-n", ns});
  argv.insert(argv.end(), {"-batch", "-"});
  RunOptions opts;
  for (const auto& line : lines) opts.stdin_data += line + "\n";
  Status s = RunChecked(argv, opts);
  if (!s.ok()) return Status::Errorf("{} (batch: {})", s.message(), fmt::join(lines, "; "));
  return s;
}

// Read from sysfs (the daemon's own network namespace): no process to start.
bool LinkExists(const std::string& name) { return files::Exists("/sys/class/net/" + name); }

bool LinkUp(const std::string& name) {
  auto flags = files::Read("/sys/class/net/" + name + "/flags");
  return flags.ok() && (std::strtoul(flags->c_str(), nullptr, 16) & IFF_UP) != 0;
}

std::vector<std::string> Lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string line;
  while (std::getline(in, line)) out.push_back(line);
  return out;
}

}  // namespace

Result<Subnet> ParseSubnet(const std::string& cidr) {
  static const std::regex re(R"(^(\d{1,3}\.\d{1,3}\.\d{1,3})\.0/24$)");
  std::smatch m;
  if (!std::regex_match(cidr, m, re)) return Status::Errorf("subnet \"{}\": must be a.b.c.0/24", cidr);
  return Subnet{m[1]};
}

std::string NetworkNames::HostVeth(const std::string& pod) const {
  return fmt::format("{}{:05x}", HostVethPrefix(), Fnv1a(pod) & 0xfffff);
}

NetworkNames NamesFor(const std::string& material) {
  return NetworkNames{fmt::format("{:06x}", Fnv1a(material) & 0xffffff)};
}

Result<int> AllocateHost(const std::vector<int>& taken) {
  std::set<int> used(taken.begin(), taken.end());
  for (int h = 2; h <= 254; ++h) {
    if (!used.count(h)) return h;
  }
  return Status::Error("subnet is full: 253 pods already hold addresses");
}

Result<std::optional<std::string>> Network::SubnetOwner(const Subnet& subnet) {
  ASSIGN_OR_RETURN(ProcessResult r, RunProcess({"ip", "-j", "-4", "addr", "show"}));
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (!j.is_array()) return std::optional<std::string>();
  for (const auto& link : j) {
    for (const auto& a : link.value("addr_info", nlohmann::json::array())) {
      if (a.value("local", "") == subnet.Gateway()) {
        return std::optional<std::string>(link.value("ifname", ""));
      }
    }
  }
  return std::optional<std::string>();
}

Status Network::EnsureBridge() {
  const std::string br = names_.Bridge();
  const bool exists = LinkExists(br);
  // Checked once by this process, then only that it is still there and up.
  if (exists && bridge_checked_ && LinkUp(br)) return Status::Ok();
  std::vector<std::string> lines;
  if (!exists) {
    ASSIGN_OR_RETURN(auto owner, SubnetOwner(subnet_));
    if (owner) {
      return Status::Errorf("subnet {}.0/24 is already used by interface {}: choose another spec.network.subnet",
                            subnet_.prefix, *owner);
    }
    lines.push_back(fmt::format("link add {} type bridge", br));
    lines.push_back(fmt::format("addr add {}/24 dev {}", subnet_.Gateway(), br));
  }
  lines.push_back(fmt::format("link set {} up", br));
  // The daemon's own requests to the pods (slurmrestd, probes) get the same quick ACKs.
  lines.push_back(QuickAckRoute(br, subnet_.Gateway()));
  RETURN_IF_ERROR(IpBatch("", lines));
  bridge_checked_ = true;
  return Status::Ok();
}

std::string PodMac(const std::string& ip) {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (std::sscanf(ip.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4) return "";
  // Locally administered, unicast (02:...), as Docker's bridge derives its containers' from their IPs.
  return fmt::format("02:42:{:02x}:{:02x}:{:02x}:{:02x}", a & 0xff, b & 0xff, c & 0xff, d & 0xff);
}

Status Network::EnsurePod(const std::string& pod, const std::string& ip) {
  const std::string ns = names_.Netns(pod);
  const std::string host_veth = names_.HostVeth(pod);
  std::vector<std::string> host;
  if (!files::Exists(NetnsPath(ns))) {
    host.push_back("netns add " + ns);
  } else {
    // A namespace that exists with eth0 configured is complete; otherwise (re)build the link.
    auto probe = RunProcess({"ip", "-n", ns, "-4", "-o", "addr", "show", "dev", "eth0"});
    const bool complete = probe.ok() && probe->exit_code == 0 && probe->out.find(ip + "/24") != std::string::npos;
    if (complete && LinkExists(host_veth)) return IpBatch(ns, PodRoutes(ip));
    // Deleting the host end takes the pod's end with it.
    if (LinkExists(host_veth)) host.push_back("link del " + host_veth);
  }
  // The pod's end is made inside its namespace, already named eth0, with a MAC address derived
  // from its IP: a pod replaced under the same IP (an upgrade, a changed spec) keeps it, so the
  // bridge's and other pods' ARP caches stay right. With a fresh random one they sent its
  // packets to the gone pod's address until the entries went stale: a new slurmrestd was
  // unreachable for 40-55 s.
  host.push_back(fmt::format("link add {} type veth peer name eth0 address {} netns {}", host_veth, PodMac(ip), ns));
  host.push_back(fmt::format("link set {} master {} up", host_veth, names_.Bridge()));
  RETURN_IF_ERROR(IpBatch("", host));
  // IPv4 only: the bridge drops IPv6 (pod_firewall.h), so eth0 gets no link-local IPv6 address
  // that programs would try and fail to use (Open MPI pairs processes over it and gives up).
  std::vector<std::string> inside = {"link set eth0 addrgenmode none", fmt::format("addr add {}/24 dev eth0", ip),
                                     "link set eth0 up", "link set lo up"};
  for (auto& route : PodRoutes(ip)) inside.push_back(std::move(route));
  return IpBatch(ns, inside);
}

// Slurm's daemons send each RPC as two writes (length, then body) without TCP_NODELAY, so with
// delayed ACKs every request and every answer waits ~40 ms for the peer's ACK (Nagle): measured
// here, `sacctmgr add user` took 0.65 s (6 RPCs) and `sacctmgr show` 0.21 s; with quick ACKs on
// the pods' routes 0.05 s and 0.04 s. The routes are the pod's own, made here.
std::string Network::QuickAckRoute(const std::string& dev, const std::string& src) const {
  return fmt::format("route replace {}.0/24 dev {} proto kernel scope link src {} quickack 1", subnet_.prefix, dev,
                     src);
}

std::vector<std::string> Network::PodRoutes(const std::string& ip) const {
  return {QuickAckRoute("eth0", ip), fmt::format("route replace default via {} quickack 1", subnet_.Gateway())};
}

Status Network::DeletePod(const std::string& pod) {
  const std::string host_veth = names_.HostVeth(pod);
  if (LinkExists(host_veth)) RETURN_IF_ERROR(Ip({"link", "del", host_veth}));
  const std::string ns = names_.Netns(pod);
  if (files::Exists(NetnsPath(ns))) RETURN_IF_ERROR(Ip({"netns", "del", ns}));
  return Status::Ok();
}

Status Network::DeleteAll() {
  Status first;
  ASSIGN_OR_RETURN(ProcessResult links, RunProcess({"ip", "-o", "link", "show"}));
  for (const auto& line : Lines(links.out)) {
    // "12: hpv1a2b3c4d5e6@if11: <...>"
    auto a = line.find(": ");
    if (a == std::string::npos) continue;
    auto b = line.find_first_of("@:", a + 2);
    std::string name = line.substr(a + 2, b - a - 2);
    if (name.rfind(names_.HostVethPrefix(), 0) == 0) {
      Status st = Ip({"link", "del", name});
      if (!st.ok() && first.ok()) first = st;
    }
  }
  for (const auto& ns : files::ListDir("/run/netns")) {
    if (ns.rfind(names_.NetnsPrefix(), 0) == 0) {
      Status st = Ip({"netns", "del", ns});
      if (!st.ok() && first.ok()) first = st;
    }
  }
  if (LinkExists(names_.Bridge())) {
    Status st = Ip({"link", "del", names_.Bridge()});
    if (!st.ok() && first.ok()) first = st;
  }
  return first;
}

}  // namespace hpc::runtime::local
