// The pod network allows only what Slurm needs (src/operator/network_flows.h), with real Slurm
// and nftables: from a tenant's login pod and from a job on a worker, MariaDB and the host are
// unreachable, while srun across workers, sbatch, squeue, sacct and the REST API keep working.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "common/files.h"
#include "harness.h"

namespace hpc::it {
namespace {

using namespace std::chrono_literals;

// A bash line that prints "open" when a TCP connection to host:port is accepted within 2 s,
// and "closed" when it is refused, dropped or times out.
std::string Probe(const std::string& host, int port) {
  return "if timeout 2 bash -c 'exec 3<>/dev/tcp/" + host + "/" + std::to_string(port) +
         "' 2>/dev/null; then echo open; else echo closed; fi";
}

// A listener on every host address, the cluster's bridge included, for the test's life.
class HostListener {
 public:
  HostListener() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    if (::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd_, 16) == 0 &&
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
      port_ = ntohs(a.sin_port);
    }
  }
  ~HostListener() { ::close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

TEST(NetworkPolicyIT, TenantsReachSlurmAndTheirStepsButNotTheDatabaseOrTheHost) {
  ClusterOptions o;
  o.replicas = 2;
  TestCluster c("netpol", o);
  ASSERT_EQ(c.Up().exit_code, 0);
  HostListener host;
  ASSERT_GT(host.port(), 0);
  const std::string mariadb = c.name() + "-mariadb";
  const std::string restapi = c.name() + "-restapi";
  const std::string probes = Probe(mariadb, 3306) + "; " + Probe("hpcplane-host", host.port()) + "; " +
                             Probe(c.name() + "-controller", 6817) + "; " + Probe(restapi, 6820);
  // The host's listener answers the host itself: what the pods meet is the policy.
  ASSERT_EQ(RunProcess({"bash", "-c", Probe("127.0.0.1", host.port())})->out, "open\n");

  // From the login pod (alice) and from alice's job: Slurm's daemons yes, MariaDB and host no.
  auto login = c.Login("alice", {"bash", "-c", probes});
  EXPECT_EQ(login.out, "closed\nclosed\nopen\nopen\n") << login.err;
  auto job = c.Login("alice", {"srun", "-N1", "bash", "-c", probes}, 90s);
  EXPECT_EQ(job.out, "closed\nclosed\nopen\nopen\n") << job.err;
  // The admin's daemons still reach what they need: slurmdbd its database (accounting works).
  auto db = c.Cli({"exec", c.name() + "-slurmdbd", "--", "bash", "-c", Probe(mariadb, 3306)});
  EXPECT_EQ(db.out, "open\n") << db.err;

  // A tool's port on a login pod (JupyterLab's 18888) is for the agent alone, on the host: a job
  // cannot reach it. Every other port stays open to the user's jobs (a Dask scheduler they call).
  const std::string listener =
      "import socket, time\n"
      "held = [socket.create_server(('', port)) for port in (18888, 20000)]\n"
      "time.sleep(600)\n";
  auto serving =
      c.Login("alice", {"bash", "-c", "setsid python3 -c \"" + listener + "\" </dev/null >/dev/null 2>&1 &"});
  ASSERT_EQ(serving.exit_code, 0) << serving.err;
  const std::string login_pod = c.name() + "-login";
  std::string login_ip;
  for (const auto& line : SplitLines(files::Read(c.ClusterDir() + "/runtime/hosts").value_or(""))) {
    const auto space = line.find_first_of(" \t");
    if (space != std::string::npos && line.substr(line.find_last_of(" \t") + 1) == login_pod) {
      login_ip = line.substr(0, space);
    }
  }
  ASSERT_FALSE(login_ip.empty()) << "no address for " << login_pod;
  EXPECT_TRUE(WaitFor(
      [&] {
        return RunProcess({"bash", "-c", Probe(login_ip, 18888)})->out == "open\n";
      },
      20s))
      << "the host (the agent) reaches the tool's port";
  auto tools =
      c.Login("alice", {"srun", "-N1", "bash", "-c", Probe(login_pod, 18888) + "; " + Probe(login_pod, 20000)}, 90s);
  EXPECT_EQ(tools.out, "closed\nopen\n") << tools.err;

  // Slurm works across pods: a step on both workers (worker ↔ login), a batch job, the queue,
  // the accounting records and the REST API.
  auto two = c.Login("alice", {"srun", "-N2", "hostname"}, 90s);
  EXPECT_EQ(two.exit_code, 0) << two.err;
  EXPECT_EQ(SplitLines(two.out).size(), 2u) << two.out;
  auto batch = c.Login("alice", {"sbatch", "-N2", "-o", "/dev/null", "--wrap", "srun hostname"});
  int64_t id = JobIdFrom(batch.out);
  ASSERT_GT(id, 0) << batch.err;
  EXPECT_TRUE(WaitFor([&] { return c.JobField(id, "JobState") == "COMPLETED"; }, 60s)) << c.JobField(id, "JobState");
  EXPECT_EQ(c.Login("alice", {"squeue"}).exit_code, 0);
  EXPECT_TRUE(WaitFor(
      [&] {
        auto r = c.Login("alice", {"sacct", "-n", "-X", "-P", "-o", "State", "-j", std::to_string(id)});
        return Trim(r.out) == "COMPLETED";
      },
      60s));
  auto rest = c.Login("alice", {"curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-m", "5",
                                "http://" + restapi + ":6820/slurm/v0.0.38/ping"});
  // Answered (no token: slurmrestd itself refuses it), not cut off: curl says 000 when nothing answers.
  EXPECT_TRUE(rest.out.size() == 3 && rest.out != "000") << rest.out << rest.err;
}

}  // namespace
}  // namespace hpc::it
