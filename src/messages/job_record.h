// One HPC job's accounting record as the control plane keeps it, forever. Keyed by
// (data plane, cluster, job id, submit time): Slurm reuses job ids (a new cluster, a wrapped
// counter, a reconfigure at the wrong moment), the submit time tells the runs apart.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::cp {

struct JobRecord {
  std::string data_plane;
  std::string cluster;
  int64_t job_id = 0;
  int64_t submit_time = 0;  // unix seconds
  std::string name;
  std::string user;
  std::string project;    // Slurm account
  std::string partition;  // a workspace's partition is named like the workspace
  std::string state;      // COMPLETED, FAILED, CANCELLED, RUNNING, ...
  std::string exit_code;  // "0:0"
  int64_t start_time = 0;
  int64_t end_time = 0;
  int64_t elapsed_seconds = 0;
  int64_t cpu_seconds = 0;  // TotalCPU: user + system time of all tasks
  int64_t max_rss_kib = 0;  // largest MaxRSS of the job's steps
  int nodes = 0;
  std::string node_list;
  std::string tres;                 // AllocTRES, e.g. cpu=2,mem=1G,node=1
  std::string source = "terminal";  // terminal | api
  // A task of a job array (sbatch --array): the array's job id and the task's index, as Slurm
  // shows it (123_4 is task 4 of array 123); 0 and "" for a job that is not.
  int64_t array_job_id = 0;
  std::string array_task;
};

nlohmann::json ToJson(const JobRecord& r);
// A malformed record is an InvalidArgument naming its field.
Result<JobRecord> JobRecordFromJson(const nlohmann::json& j);

// CSV: a header line, then one line per record (RFC 4180 quoting).
std::string CsvHeader();
std::string ToCsvLine(const JobRecord& r);

}  // namespace hpc::cp
