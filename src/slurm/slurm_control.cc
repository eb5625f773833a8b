#include "slurm/slurm_control.h"

namespace hpc::slurm {

Status ScontrolInPod::Scontrol(const std::vector<std::string>& args) {
  runtime::ExecOptions opts;
  opts.user = "slurm";
  opts.argv = {"scontrol"};
  opts.argv.insert(opts.argv.end(), args.begin(), args.end());
  opts.timeout = std::chrono::milliseconds(15000);
  ASSIGN_OR_RETURN(ProcessResult r, runtime_->Exec(pod_, opts));
  if (!r.ok()) {
    std::string err = r.err.empty() ? r.out : r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return Status::Errorf("scontrol {} failed (exit {}): {}", JoinArgs(args), r.exit_code, err);
  }
  return Status::Ok();
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
