// The workers' health check program and its per-nodeset settings.
//
// slurmd runs the program every HealthCheckInterval and, as the Epilog, after every job. It
// checks the worker (free space in /tmp and slurmd's spool, datasets mounted and readable,
// munge answering (22.05), the GPUs as nvidia-smi and the kernel's log see them, no process of a user left outside a
// running job, the clock against slurmctld's, and the admin's own scripts for the nodeset), each under a timeout, and
// writes the outcome into the node's Extra field:
//
//   hpcplane-health:<unix seconds>:ok
//   hpcplane-health:<unix seconds>:fail:<check>: <detail>
//
// followed, on a worker with GPUs and nvidia-smi, by each GPU's numbers:
//   |gpus=<bus id>,<utilisation %>,<memory used MiB>,<memory total MiB>,<temperature °C>;...
//
// It decides nothing else: the operator reads the reports with the node list and drains,
// resumes and replaces (operator/health_policy.h), so one policy with one cap (maxUnhealthy)
// holds for the whole nodeset. The program always exits 0: a failing HealthCheckProgram or
// Epilog would make Slurm drain the node under a reason of its own, which hpcplane would have to
// treat as an admin's. It detaches from slurmd at once, so a slow check never delays slurmd's
// start (it runs before registration) or a job's end.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/types.h"

namespace hpc::slurm {

// Where the program and the settings are mounted in worker pods.
inline constexpr const char* kHealthCheckProgram = "/run/slurm-scripts/health_check";
inline constexpr const char* kHealthConfigDir = "/run/slurm-health";
// Prefixes of a report in a node's Extra field and of a drain reason set on a failed check.
inline constexpr const char* kHealthReportPrefix = "hpcplane-health:";
inline constexpr const char* kHealthDrainPrefix = "hpcplane:health:";

// The check program (bash), the same for every cluster.
std::string HealthCheckScript();

// Settings for one nodeset's workers, read by the program from
// kHealthConfigDir/<nodeset>.conf: thresholds, timeout and the datasets to look at.
// `munge`: whether the cluster authenticates with munge (its check asks munged); with auth/slurm
// slurmd holds the key itself and the report's own `scontrol update` proves it works.
// `gpus`: the GPUs each worker declares (checked where nvidia-smi is in the worker).
std::string HealthCheckConfig(const api::HealthChecksSpec& h, const std::vector<api::Dataset>& datasets,
                              bool munge = true, int gpus = 0);

// The config-map key of an admin's check script of a nodeset.
std::string HealthCheckScriptKey(const std::string& nodeset, const std::string& check);

// One GPU as the last report saw it; -1 where nvidia-smi had no value.
struct GpuSample {
  std::string bus_id;  // as nvidia-smi prints it, lower case: 00000000:3b:00.0
  int utilization_percent = -1;
  int64_t memory_used_mib = -1;
  int64_t memory_total_mib = -1;
  int temperature_celsius = -1;
};

struct HealthReport {
  bool present = false;  // the node's Extra holds a report
  int64_t at = 0;        // when the program wrote it
  bool ok = true;
  std::string check;  // the first failing check
  std::string detail;
  std::vector<GpuSample> gpus;
};

// Reads a report from a node's Extra field; anything else (an admin's text) is no report.
HealthReport ParseHealthReport(const std::string& extra);

}  // namespace hpc::slurm
