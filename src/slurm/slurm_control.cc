#include "slurm/slurm_control.h"

namespace hpc::slurm {

Status ScontrolInPod::RunAsSlurm(std::vector<std::string> argv) {
  runtime::ExecOptions opts;
  opts.user = "slurm";
  opts.argv = std::move(argv);
  opts.timeout = std::chrono::milliseconds(15000);
  ASSIGN_OR_RETURN(ProcessResult r, runtime_->Exec(pod_->Get(), opts));
  if (!r.ok()) {
    std::string err = r.err.empty() ? r.out : r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return Status::Errorf("{} failed (exit {}): {}", JoinArgs(opts.argv), r.exit_code, err);
  }
  return Status::Ok();
}

Status ScontrolInPod::Scontrol(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {"scontrol"};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunAsSlurm(std::move(argv));
}

Status ScontrolInPod::ResetNode(const std::string& node, const std::string& reason) {
  RETURN_IF_ERROR(Scontrol({"update", "NodeName=" + node, "State=DOWN", "Reason=" + reason}));
  return Scontrol({"update", "NodeName=" + node, "State=RESUME"});
}

Status ScontrolInPod::CreatePartition(const std::string& partition, const std::vector<std::string>& options) {
  std::vector<std::string> args = {"create", "PartitionName=" + partition};
  args.insert(args.end(), options.begin(), options.end());
  return Scontrol(args);
}

Status ScontrolInPod::UpdatePartition(const std::string& partition, const std::vector<std::string>& options) {
  std::vector<std::string> args = {"update", "PartitionName=" + partition};
  args.insert(args.end(), options.begin(), options.end());
  return Scontrol(args);
}

Status ScontrolInPod::DeletePartition(const std::string& partition) {
  return Scontrol({"delete", "PartitionName=" + partition});
}

Status ScontrolInPod::CancelPartitionJobs(const std::string& partition) {
  return RunAsSlurm({"scancel", "--partition=" + partition});
}

Status ScontrolInPod::EndJobsOnNode(const std::string& node, bool requeue) {
  if (!requeue) return RunAsSlurm({"scancel", "--nodelist=" + node});
  // `scontrol requeue` takes job ids only: those running on the node ($1), each on its own so
  // that one Slurm cannot requeue (not a batch job) leaves the others requeued.
  static const std::string kRequeueEach =
      "status=0; for id in $(squeue -h -w \"$1\" -t RUNNING -o %A); do scontrol requeue \"$id\" || status=1; done; "
      "exit $status";
  return RunAsSlurm({"/bin/sh", "-c", kRequeueEach, "end-jobs", node});
}

Status ScontrolInPod::DrainNode(const std::string& node, const std::string& reason) {
  return Scontrol({"update", "NodeName=" + node, "State=DRAIN", "Reason=" + reason});
}

Status ScontrolInPod::ResumeNode(const std::string& node) {
  return Scontrol({"update", "NodeName=" + node, "State=RESUME"});
}

Status ScontrolInPod::DeleteNode(const std::string& node) { return Scontrol({"delete", "NodeName=" + node}); }

Status ScontrolInPod::Reconfigure() { return Scontrol({"reconfigure"}); }

}  // namespace hpc::slurm
