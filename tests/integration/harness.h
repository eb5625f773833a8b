// Integration-test harness: runs the real hpcplane binary against real Slurm daemons, each
// cluster with its own state dir, name and subnet so tests can run side by side.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/subprocess.h"
#include "testkit/processes.h"

namespace hpc::it {

// Whether jobs are confined on this host (slurmd's cgroups: a cgroup v1 hierarchy).
bool HostHasCgroupV1();

struct ClusterOptions {
  int replicas = 2;  // -1: autoscaled (no spec.replicas)
  int max_replicas = 4;
  int cpus = 1;                            // each worker's CPUs
  int64_t memory_mib = 500;                // each worker's memory
  int64_t tmp_mib = 0;                     // the workers' /tmp size; 0: the default
  int gpus = 0;                            // each worker's GPUs
  std::string extra_nodeset_spec;          // more YAML lines under the nodeset's spec (2-space indented)
  std::vector<std::string> extra_config;   // slurm.conf lines for spec.scheduling.extraConfig
  std::string extra_cluster_spec;          // more YAML lines under the cluster's spec (2-space indented)
  std::string state_parent;                // where the state dir is made ("" : $TMPDIR or /tmp)
  std::vector<std::string> extra_up_args;  // e.g. {"--metrics-listen", "127.0.0.1:PORT"}
};

class TestCluster {
 public:
  explicit TestCluster(const std::string& tag, ClusterOptions opts = {});
  ~TestCluster();  // brings the cluster down and removes its state dir

  // Writes the manifest and runs `hpcplane up --detach`.
  ProcessResult Up();
  ProcessResult Down(bool purge = true);

  // Runs the hpcplane CLI against this cluster.
  ProcessResult Cli(const std::vector<std::string>& args,
                    std::chrono::milliseconds timeout = std::chrono::seconds(120));
  // Runs a command in the cluster's login pod as `user`.
  ProcessResult Login(const std::string& user, const std::vector<std::string>& cmd,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));

  const std::string& name() const { return name_; }
  const std::string& state_dir() const { return state_dir_; }
  const std::string& manifest_path() const { return manifest_; }
  std::string subnet_prefix() const { return subnet_prefix_; }
  std::string ClusterDir() const { return state_dir_ + "/clusters/" + name_; }
  std::string SharedVolume() const { return ClusterDir() + "/runtime/volumes/dataset-shared"; }
  std::string NetnsPrefix() const;  // what this cluster's namespaces are called
  std::string LinkPrefix() const;

  // Names of the nodes Slurm lists, with their state, from the login pod.
  std::vector<std::string> SinfoNodes();
  // The cpu nodeset's status as JSON (from `get nodesets -o json`), or null.
  std::string NodeSetStatusField(const std::string& field);
  // Field `f` of `scontrol show job ID`, e.g. JobState; "" when unknown.
  std::string JobField(int64_t id, const std::string& f);

 private:
  std::string name_;
  std::string state_dir_;
  std::string manifest_;
  std::string subnet_prefix_;
  int subnet_claim_ = -1;  // held for the cluster's life (ClaimSubnet in harness.cc)
  std::vector<std::string> extra_up_args_;
  bool up_ = false;
};

// The process helpers live in testkit/ (shared with the benchmarks); the tests name them here.
using testkit::Background;
using testkit::FreeLoopbackPort;
using testkit::SplitLines;
using testkit::Trim;
using testkit::WaitFor;

// The job id in sbatch's "Submitted batch job N", or -1.
int64_t JobIdFrom(const std::string& sbatch_out);

}  // namespace hpc::it
