#include "slurm/squeue_jobs.h"

#include "slurm/rest_client.h"

namespace hpc::slurm {

Result<std::vector<SlurmJob>> SqueueJobs(runtime::PodRuntime* rt, const std::string& controller_pod) {
  runtime::ExecOptions o;
  o.user = "slurm";
  // Every state: Slurm 23.11 on lists only pending and running jobs by default, where 22.05 also
  // listed those that ended within MinJobAge (a short job may be seen only once it ended).
  o.argv = {"squeue", "--json", "--states=all"};
  o.timeout = std::chrono::milliseconds(30000);
  ASSIGN_OR_RETURN(ProcessResult r, rt->Exec(controller_pod, o));
  if (!r.ok()) {
    std::string err = r.err.empty() ? r.out : r.err;
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return Status::Errorf("squeue --json failed (exit {}): {}", r.exit_code, err);
  }
  auto jobs = RestClient::ParseJobs(r.out);
  if (!jobs.ok()) return Status::Errorf("squeue --json: {}", jobs.status().message());
  return jobs;
}

}  // namespace hpc::slurm
