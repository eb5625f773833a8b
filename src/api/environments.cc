#include "api/environments.h"

#include <algorithm>
#include <regex>
#include <set>

#include "common/printable.h"

namespace hpc::api {
namespace {

// Debian's Slurm 26.05 ships no mpi/pmix plugin (sid's PMIx is 7.0), and the Open MPI there
// (5 and on) speaks PMIx only: srun cannot start its ranks. MPICH speaks PMI-1/PMI-2, which
// Slurm's mpi/pmi2 serves, so on 26.05 MPICH is the MPI that `mpicc` and `mpirun` name and
// `srun ./program` starts (MpiDefault=pmi2, slurm::DefaultMpi). Open MPI stays installed:
// mpi4py and PyTorch link it, and run under `mpirun.openmpi`.
// Named exactly: sid's MPICH also registers an "mpi_abi_mpich" choice whose mpicc links back to
// mpicc. The headers' group (per architecture) exists only where libmpich-dev is (workspaces).
constexpr const char* kMpichByDefault =
    "update-alternatives --set mpirun /usr/bin/mpirun.mpich\n"
    "if [ -e /usr/bin/mpicc.mpich ]; then update-alternatives --set mpi /usr/bin/mpicc.mpich; fi\n"
    "for headers in /usr/include/*-linux-gnu*/mpich; do\n"
    "  if [ -d \"$headers\" ]; then\n"
    "    update-alternatives --set \"mpi-$(basename \"$(dirname \"$headers\")\")\" \"$headers\"\n"
    "  fi\n"
    "done\n";

bool MpichByDefault(const std::string& release) { return release == "26.05"; }

Environment BuiltinCluster(const std::string& release, const std::string& suite) {
  Environment e;
  e.metadata.name = "slurm-" + release;
  e.spec.suite = suite;
  e.spec.purpose = kPurposeCluster;
  // mpi4py's hello (python3 -m mpi4py.bench helloworld) proves MPI without a compiler.
  e.spec.packages = {"python3-mpi4py"};
  if (MpichByDefault(release)) {
    e.spec.packages.push_back("mpich");
    e.spec.post_install = kMpichByDefault;
  }
  return e;
}

// What a practitioner expects at a login node: build an MPI program (mpicc), run Python with
// NumPy and mpi4py, fetch code, edit files.
Environment BuiltinWorkspace(const std::string& release, const std::string& suite) {
  Environment e;
  e.metadata.name = "workspace-" + release;
  e.spec.suite = suite;
  e.spec.purpose = kPurposeWorkspace;
  e.spec.packages = {"build-essential",
                     "libopenmpi-dev",
                     "python3",
                     "python3-numpy",
                     "python3-mpi4py",
                     "git",
                     "less",
                     "nano",
                     "vim-tiny",
                     "make"};
  if (MpichByDefault(release)) {
    e.spec.packages.push_back("libmpich-dev");
    e.spec.post_install = kMpichByDefault;
  }
  return e;
}

Status EnvError(const Environment& e, const std::string& path, const std::string& why) {
  return Status::Errorf("environment \"{}\": {}: {}", Printable(e.metadata.name), path, Printable(why));
}

}  // namespace

const std::vector<Environment>& BuiltinEnvironments() {
  static const std::vector<Environment> kBuiltins = {
      BuiltinCluster("26.05", "sid"),   BuiltinCluster("24.11", "trixie"),   BuiltinCluster("22.05", "bookworm"),
      BuiltinWorkspace("26.05", "sid"), BuiltinWorkspace("24.11", "trixie"), BuiltinWorkspace("22.05", "bookworm")};
  return kBuiltins;
}

std::optional<Environment> FindBuiltinEnvironment(const std::string& name) {
  for (const auto& e : BuiltinEnvironments()) {
    if (e.metadata.name == name) return e;
  }
  return std::nullopt;
}

bool SuiteHasSackd(const std::string& suite) {
  static const std::set<std::string> kBefore = {"buster", "bullseye", "bookworm", "oldstable", "oldoldstable"};
  return kBefore.count(suite) == 0;
}

std::vector<std::string> BasePackages(const std::string& purpose, const std::string& suite) {
  std::vector<std::string> v = {"bash",       "coreutils", "procps",          "iproute2", "hostname",
                                "util-linux", "findutils", "ca-certificates", "curl"};
  if (purpose == kPurposeWorkspace) {
    v.insert(v.end(), {"slurm-client", "slurm-wlm-jwt-plugin", "munge", "openmpi-bin"});
  } else {
    v.insert(v.end(), {"slurmctld", "slurmd", "slurmdbd", "slurmrestd", "slurm-client", "slurm-wlm-jwt-plugin", "munge",
                       "mariadb-server", "openmpi-bin"});
  }
  // auth/slurm's client daemon, for login pods (Slurm 23.11 on: Debian from trixie). Before,
  // Debian's Slurm (22.05) has mpi/pmix, the cluster's MpiDefault, which loads libpmix.so by its
  // unversioned name (in libpmix-dev): without it every srun fails, in a worker's slurmstepd and
  // in the login pod alike (24.11's loads libpmix.so.2, which openmpi-bin brings).
  if (SuiteHasSackd(suite)) {
    v.push_back("sackd");
  } else {
    v.push_back("libpmix-dev");
  }
  return v;
}

const std::vector<EnvironmentFile>& BaseFiles(const std::string&) {
  static const std::vector<EnvironmentFile> kFiles = {
      // A rank waiting for a message spins; the kernel delivers its peer's packets between pods
      // (veth, bridge) in softirq work that the host's CPUs also run. Where spinning ranks fill
      // the CPUs, the delivery waits for the scheduler's next tick: a round trip between two
      // workers on a 2-CPU host took 4 ms, against 23 us with ranks that yield while idle. On
      // Kubernetes too (the same images) a worker's pod shares its node's CPUs with the node's
      // network; yielding costs 0.5 us a round trip within one pod.
      {"/etc/openmpi/openmpi-mca-params.conf",
       "# hpcplane: ranks on different pods talk over the pods' network, not only loopback.\n"
       "btl_base_warn_component_unused=0\n"
       "btl_tcp_if_exclude=127.0.0.0/8\n"
       "# hpcplane: pods share the host's CPUs with the network between them: idle ranks yield.\n"
       "mpi_yield_when_idle=1\n",
       0644},
      // Pods on one kernel share its boot id, which UCX (under MPICH) takes for the machine's: it
      // would map another pod's System V or POSIX shared memory (another IPC namespace) or read its
      // processes' memory (another PID namespace) and fail MPI_Init. MPICH's own shared memory
      // still carries the ranks within one pod.
      {"/etc/ucx/ucx.conf",
       "# hpcplane: no shared memory between pods that UCX thinks are one machine.\n"
       "UCX_TLS=^sysv,posix,cma\n",
       0644}};
  return kFiles;
}

std::string ClusterEnvironment(const SlurmCluster& c) {
  return c.spec.environment.empty() ? kDefaultEnvironment : c.spec.environment;
}

std::string WorkerEnvironment(const NodeSet& n, const SlurmCluster& c) {
  return n.spec.environment.empty() ? ClusterEnvironment(c) : n.spec.environment;
}

std::string WorkspaceEnvironment(const Workspace& w, const SlurmCluster& c) {
  return w.spec.environment.empty() ? ClusterEnvironment(c) : w.spec.environment;
}

Status ValidateEnvironmentName(const std::string& name) {
  static const std::regex re("^[a-z]([a-z0-9.-]{0,38}[a-z0-9])?$");
  if (name.empty()) return Status::Error("must not be empty");
  if (!std::regex_match(name, re) || name.find("..") != std::string::npos) {
    return Status::Errorf(
        "must be 1-40 lowercase letters, digits, '-' or '.', start with a letter and end with a letter or digit "
        "(got \"{}\")",
        Printable(name));
  }
  return Status::Ok();
}

Status Validate(const Environment& e) {
  if (Status s = ValidateEnvironmentName(e.metadata.name); !s.ok()) {
    return EnvError(e, "metadata.name", s.message());
  }
  const auto& s = e.spec;
  static const std::regex suite("^[a-z][a-z0-9-]{1,31}$");
  if (!std::regex_match(s.suite, suite)) {
    return EnvError(e, "spec.suite",
                    fmt::format("must name a Debian suite such as sid, trixie or bookworm (got \"{}\")", s.suite));
  }
  if (s.purpose != kPurposeCluster && s.purpose != kPurposeWorkspace) {
    return EnvError(e, "spec.purpose", fmt::format("must be cluster or workspace (got \"{}\")", s.purpose));
  }
  // Debian's package names (Policy 5.6.1), optionally pinned to a version with '='.
  static const std::regex package(R"(^[a-z0-9][a-z0-9+.-]+(=[A-Za-z0-9.+~:-]+)?$)");
  if (s.packages.size() > 500) return EnvError(e, "spec.packages", "at most 500 packages");
  for (size_t i = 0; i < s.packages.size(); ++i) {
    if (!std::regex_match(s.packages[i], package)) {
      return EnvError(e, fmt::format("spec.packages[{}]", i),
                      fmt::format("not a Debian package name (got \"{}\")", s.packages[i]));
    }
  }
  static const std::regex abs_path(R"(^(/[A-Za-z0-9._+-]+)+$)");
  static const std::vector<std::string> kNotInImage = {"/proc/", "/sys/", "/dev/", "/run/", "/tmp/"};
  for (size_t i = 0; i < s.files.size(); ++i) {
    const auto& f = s.files[i];
    const std::string path = fmt::format("spec.files[{}]", i);
    bool outside = std::any_of(kNotInImage.begin(), kNotInImage.end(),
                               [&](const std::string& t) { return f.path.rfind(t, 0) == 0; });
    if (!std::regex_match(f.path, abs_path) || f.path.find("/..") != std::string::npos ||
        f.path.find("/./") != std::string::npos || outside) {
      return EnvError(e, path + ".path",
                      fmt::format("must be an absolute path without '..', outside /proc, /sys, /dev, /run and /tmp "
                                  "(got \"{}\")",
                                  f.path));
    }
    if (f.mode < 0 || f.mode > 07777) return EnvError(e, path + ".mode", "must be a file mode from 0 to 07777");
    if (f.content.size() > (256 << 10)) return EnvError(e, path + ".content", "larger than 256 KiB");
  }
  if (s.post_install.size() > (64 << 10)) return EnvError(e, "spec.postInstall", "larger than 64 KiB");
  return Status::Ok();
}

}  // namespace hpc::api
