// Compute environments (the seeds' "Cluster Compute Environment" and "Workspace Compute
// Environment"): what an Environment must hold for its purpose, the built-in ones, and their
// checks. Building them is the runtime's business (runtime/local/image_store.h).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/types.h"
#include "common/result.h"

namespace hpc::api {

inline constexpr const char* kPurposeCluster = "cluster";
inline constexpr const char* kPurposeWorkspace = "workspace";

// What a cluster runs when its spec names no environment: the newest built-in.
inline constexpr const char* kDefaultEnvironment = "slurm-26.05";

// Built-in environments, newest Slurm first. For clusters: slurm-26.05 (sid), slurm-24.11
// (trixie), slurm-22.05 (bookworm), each with Slurm's daemons and CLI, munge, MariaDB, Open MPI
// and PMIx (and MPICH, the default MPI, on 26.05). For workspaces: workspace-26.05,
// workspace-24.11, workspace-22.05, the Slurm CLI of that release with a practitioner's tools
// (compilers, mpicc, Python with NumPy, git, editors).
const std::vector<Environment>& BuiltinEnvironments();
std::optional<Environment> FindBuiltinEnvironment(const std::string& name);

// The packages an image of this purpose and Debian suite gets besides its spec's: what
// hpcplane's pods run (Slurm's daemons or CLI, munge or sackd, MariaDB, the health check's
// tools, MPI's launcher).
std::vector<std::string> BasePackages(const std::string& purpose, const std::string& suite);
// Whether the suite's Slurm is 23.11 or later and so packages sackd (auth/slurm).
bool SuiteHasSackd(const std::string& suite);

// The files an image of this purpose gets before its spec's own (which may replace them): MPI's
// defaults for pods that reach each other over eth0 (Debian's keep Open MPI's TCP on lo) and that
// share a kernel but not memory (UCX's shared memory transports off).
const std::vector<EnvironmentFile>& BaseFiles(const std::string& purpose);

// The environment a cluster's Slurm pods run from, and a nodeset's workers.
std::string ClusterEnvironment(const SlurmCluster& c);
std::string WorkerEnvironment(const NodeSet& n, const SlurmCluster& c);
// A workspace's login pod: the workspace's own environment, else the cluster's.
std::string WorkspaceEnvironment(const Workspace& w, const SlurmCluster& c);

// Environment names may carry a release: 1-40 of a-z, 0-9, '-' and '.', starting with a
// letter and ending with a letter or digit.
Status ValidateEnvironmentName(const std::string& name);
Status Validate(const Environment& e);

}  // namespace hpc::api
