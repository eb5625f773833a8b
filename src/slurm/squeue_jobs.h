// Slurm's job list read with `squeue --json` in the controller pod. Slurm 22.05 prints the same
// document as slurmrestd's v0.0.38 /jobs, but from a process that exits: slurmrestd 22.05 keeps
// the memory of every job listing it serves (bench/README.md), and the operator lists jobs on
// every pass.
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "runtime/pod_runtime.h"
#include "slurm/slurm_client.h"

namespace hpc::slurm {

Result<std::vector<SlurmJob>> SqueueJobs(runtime::PodRuntime* rt, const std::string& controller_pod);

}  // namespace hpc::slurm
