#include "harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "runtime/local/network.h"

namespace hpc::it {
namespace {
std::atomic<int> g_counter{0};

std::string ExtraConfig(const std::vector<std::string>& lines) {
  if (lines.empty()) return "";
  std::string out = "  scheduling:\n    extraConfig:\n";
  for (const auto& l : lines) out += "      - \"" + l + "\"\n";
  return out;
}

// Test clusters take /24s of 10.240.0.0-10.249.255.0 (the benchmarks' scripts use 10.237-239 and
// 10.250-251). A subnet is claimed by binding an abstract unix socket named after it: the bind
// fails while another test process holds it, and the kernel releases it when the holder closes
// it or dies, so tests run side by side (ctest -j) never share a subnet and nothing is left on
// disk.
std::string ClaimSubnet(int seed, int& claim_fd) {
  constexpr int kSubnets = 10 * 256;
  for (int i = 0; i < kSubnets; ++i) {
    const int k = ((seed % kSubnets) + kSubnets + i) % kSubnets;
    const std::string prefix = "10." + std::to_string(240 + k / 256) + "." + std::to_string(k % 256);
    int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string name = "hpcplane-it-subnet-" + prefix;
    std::memcpy(addr.sun_path + 1, name.data(), name.size());  // sun_path[0] == 0: abstract
    auto len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), len) == 0) {
      claim_fd = fd;
      return prefix;
    }
    ::close(fd);
  }
  claim_fd = -1;
  return "10.249.255";  // every subnet is held: the cluster's bring-up will say so
}
}  // namespace

int64_t JobIdFrom(const std::string& sbatch_out) {
  auto pos = sbatch_out.find("Submitted batch job ");
  return pos == std::string::npos ? -1 : std::stoll(sbatch_out.substr(pos + 20));
}

TestCluster::TestCluster(const std::string& tag, ClusterOptions opts) {
  int n = g_counter++;
  int pid = static_cast<int>(::getpid());
  name_ = tag + std::to_string(pid % 10000) + std::to_string(n);
  extra_up_args_ = opts.extra_up_args;
  if (opts.state_parent.empty()) {
    auto dir = files::MakeTempDir("hpcplane-it");
    state_dir_ = dir.ok() ? *dir : "/tmp/hpcplane-it-fallback";
  } else {
    std::string templ = opts.state_parent + "/hpcplane-it-XXXXXX";
    state_dir_ = ::mkdtemp(templ.data()) ? templ : opts.state_parent + "/hpcplane-it-fallback";
  }
  subnet_prefix_ = ClaimSubnet(pid * 31 + n * 37, subnet_claim_);
  manifest_ = state_dir_ + "/cluster.yaml";
  std::string yaml = "apiVersion: hpcplane.io/v1alpha1\nkind: SlurmCluster\nmetadata:\n  name: " + name_ +
                     "\nspec:\n  network:\n    subnet: " + subnet_prefix_ +
                     ".0/24\n  datasets:\n    - name: shared\n      mountPath: /shared\n  users:\n    - name: alice\n"
                     "      uid: 2001\n    - name: bob\n      uid: 2002\n" +
                     ExtraConfig(opts.extra_config) + opts.extra_cluster_spec +
                     "---\napiVersion: hpcplane.io/v1alpha1\n"
                     "kind: NodeSet\nmetadata:\n  name: cpu\nspec:\n" +
                     (opts.replicas >= 0 ? "  replicas: " + std::to_string(opts.replicas) + "\n" : std::string()) +
                     "  maxReplicas: " + std::to_string(opts.max_replicas) +
                     "\n  resources:\n    cpus: " + std::to_string(opts.cpus) +
                     "\n    memoryMiB: " + std::to_string(opts.memory_mib) + "\n" +
                     (opts.tmp_mib > 0 ? "    tmpMiB: " + std::to_string(opts.tmp_mib) + "\n" : std::string()) +
                     (opts.gpus > 0 ? "    gpus: " + std::to_string(opts.gpus) + "\n" : std::string()) +
                     "  partition:\n    default: true\n" + opts.extra_nodeset_spec;
  (void)files::WriteAtomic(manifest_, yaml);
}

bool HostHasCgroupV1() { return files::Exists("/sys/fs/cgroup/memory/memory.limit_in_bytes"); }

TestCluster::~TestCluster() {
  if (up_) Down(true);
  (void)files::RemoveAll(state_dir_);
  if (subnet_claim_ >= 0) ::close(subnet_claim_);
}

ProcessResult TestCluster::Up() {
  up_ = true;
  std::vector<std::string> args = {"up", "-f", manifest_, "--detach", "--timeout", "90"};
  args.insert(args.end(), extra_up_args_.begin(), extra_up_args_.end());
  return Cli(args);
}

ProcessResult TestCluster::Down(bool purge) {
  std::vector<std::string> args = {"down"};
  if (purge) args.push_back("--purge");
  auto r = Cli(args);
  if (r.exit_code == 0 && purge) up_ = false;
  return r;
}

ProcessResult TestCluster::Cli(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
  std::vector<std::string> argv = {HPCPLANE_BIN, "--state-dir", state_dir_, "--cluster", name_};
  argv.insert(argv.end(), args.begin(), args.end());
  RunOptions o;
  o.timeout = timeout;
  auto r = RunProcess(argv, o);
  return r.ok() ? *r : ProcessResult{127, "", r.status().message()};
}

ProcessResult TestCluster::Login(const std::string& user, const std::vector<std::string>& cmd,
                                 std::chrono::milliseconds timeout) {
  std::vector<std::string> args = {"exec", name_ + "-login", "--user", user, "--"};
  args.insert(args.end(), cmd.begin(), cmd.end());
  return Cli(args, timeout);
}

std::string TestCluster::NetnsPrefix() const {
  return runtime::local::NamesFor(state_dir_ + "/" + name_).NetnsPrefix();
}
std::string TestCluster::LinkPrefix() const {
  return runtime::local::NamesFor(state_dir_ + "/" + name_).HostVethPrefix();
}

std::string TestCluster::NodeSetStatusField(const std::string& field) {
  auto r = Cli({"get", "nodesets", "-o", "json"});
  auto j = nlohmann::json::parse(r.out, nullptr, false);
  if (!j.is_array() || j.empty() || !j[0]["status"].contains(field)) return "";
  const auto& v = j[0]["status"][field];
  return v.is_string() ? v.get<std::string>() : v.dump();
}

std::string TestCluster::JobField(int64_t id, const std::string& field) {
  auto r = Login("root", {"scontrol", "show", "job", std::to_string(id)});
  auto pos = r.out.find(" " + field + "=");
  if (pos == std::string::npos) pos = r.out.find("\n" + field + "=");
  if (pos == std::string::npos) return "";
  pos += 1;
  auto end = r.out.find_first_of(" \n", pos);
  return r.out.substr(pos + field.size() + 1, end - pos - field.size() - 1);
}

std::vector<std::string> TestCluster::SinfoNodes() {
  auto r = Login("root", {"sinfo", "-h", "-N", "-o", "%N %T"});
  return r.exit_code == 0 ? SplitLines(r.out) : std::vector<std::string>{};
}

}  // namespace hpc::it
