// Where a job's output files are, as Slurm says: slurmctld while it knows the job (`scontrol
// show job -o`), slurmdbd after (`sacct --expand-patterns`, Slurm 23.02 and later). Each command
// beside the parser of what it prints. The agent reads a job's output with them
// (agent/job_output.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hpc::slurm {

// A job's files as Slurm reports them.
struct JobFiles {
  std::string user;
  int64_t submit_time = 0;
  std::string state;  // RUNNING, PENDING, COMPLETED, ...
  std::string stdout_path, stderr_path;
  std::string node;  // where the batch script runs (ran): its files are there
};

// `scontrol show job -o ID` (run with SLURM_TIME_FORMAT=%s: times as unix seconds).
std::vector<std::string> ScontrolJobCommand(int64_t job_id);
// Its line for job `job_id`; nullopt when there is none.
std::optional<JobFiles> ParseScontrolJob(const std::string& text, int64_t job_id);

// `sacct -n -P -X -a --expand-patterns -j ID --format=JobIDRaw,Submit,User,State,NodeList,StdOut,StdErr`.
std::vector<std::string> SacctJobFilesCommand(int64_t job_id);
// Its record of job `job_id` submitted at `submit_time`.
std::optional<JobFiles> ParseSacctJob(const std::string& text, int64_t job_id, int64_t submit_time);

// The first host of a Slurm host list ("c1-cpu-[3-5,9]" -> "c1-cpu-3").
std::string FirstHost(const std::string& hostlist);

}  // namespace hpc::slurm
