// SlurmControl through `scontrol` run inside the controller pod as SlurmUser.
#pragma once

#include <string>

#include "runtime/pod_runtime.h"
#include "slurm/controllers.h"
#include "slurm/slurm_client.h"

namespace hpc::slurm {

class ScontrolInPod : public SlurmControl {
 public:
  // In whichever pod `pod` names when a command runs (not owned).
  ScontrolInPod(runtime::PodRuntime* runtime, const CommandPod* pod) : runtime_(runtime), pod_(pod) {}

  Status DrainNode(const std::string& node, const std::string& reason) override;
  Status ResumeNode(const std::string& node) override;
  Status DeleteNode(const std::string& node) override;
  Status Reconfigure() override;
  Status CancelPartitionJobs(const std::string& partition) override;
  Status EndJobsOnNode(const std::string& node, bool requeue) override;
  Status ResetNode(const std::string& node, const std::string& reason) override;
  Status CreatePartition(const std::string& partition, const std::vector<std::string>& options) override;
  Status UpdatePartition(const std::string& partition, const std::vector<std::string>& options) override;
  Status DeletePartition(const std::string& partition) override;

 private:
  Status Scontrol(const std::vector<std::string>& args);
  Status RunAsSlurm(std::vector<std::string> argv);

  runtime::PodRuntime* runtime_;
  const CommandPod* pod_;
};

}  // namespace hpc::slurm
