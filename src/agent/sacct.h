// Reading job records from slurmdbd with sacct, by time window (never all jobs): the command
// line and a parser of its -P output that folds each job's steps into one record (the largest
// MaxRSS of any step).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"
#include "messages/job_record.h"

namespace hpc::cp {

// sacct arguments for the records of jobs active in [start, end) (unix seconds). Run with
// SLURM_TIME_FORMAT=%s so times come back as unix seconds.
// `cancelled_only`: the second query, for jobs cancelled before they became eligible.
std::vector<std::string> SacctWindowArgs(int64_t start, int64_t end, bool cancelled_only = false);

Result<std::vector<JobRecord>> ParseSacct(const std::string& output, const std::string& data_plane);

// "1-02:03:04.500", "03:04.5", "00:00:00" -> whole seconds.
// A unix time as sacct's --starttime/--endtime take it (local time, YYYY-MM-DDTHH:MM:SS).
std::string SacctTime(int64_t t);
int64_t ParseSlurmDuration(const std::string& s);

}  // namespace hpc::cp
