// Slurm's job list as the operator reads it on every pass: `squeue` in the controller pod, printing
// only the fields the autoscaler and the metrics use, one line a job. `squeue --json` prints some
// 8 KiB a job and spends most of a pass's CPU making it (2,000 queued jobs: 16 MB and 0.8 s of
// CPU on 26.05, against 160 KB and 0.02 s for this listing; bench/README.md, "Throughput parity").
// It runs in the controller pod, not through slurmrestd: slurmrestd 22.05 keeps the memory of
// every job listing it serves.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "runtime/pod_runtime.h"
#include "slurm/slurm_client.h"

namespace hpc::slurm {

// The command (argv; run with SLURM_TIME_FORMAT=%s) that lists every job slurmctld holds,
// finished ones too (those that ended within MinJobAge): from 23.11 on squeue lists only
// pending and running jobs by default, and a short job may be seen only once it ended. The same
// command for every release (22.05 to 26.05).
std::vector<std::string> SqueueListingCommand();

// The jobs of that command's output. A line that does not have the fields
// asked for fails the whole listing, naming the line: a partial listing would look like a queue
// with fewer jobs, and the autoscaler would act on it.
Result<std::vector<SlurmJob>> ParseSqueueListing(std::string_view text);

// Runs the listing in `controller_pod` as the slurm user.
Result<std::vector<SlurmJob>> SqueueJobs(runtime::PodRuntime* rt, const std::string& controller_pod);

}  // namespace hpc::slurm
