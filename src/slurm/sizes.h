// Sizes as Slurm's commands print them (sacct's MaxRSS, squeue's MinMemory, TRES strings).
#pragma once

#include <cstdint>
#include <string>

namespace hpc::slurm {

// "1234K", "12M", "1G", "2T" -> KiB; a number without a unit is bytes ("512" -> 0). Anything
// unreadable or absurdly large is 0.
int64_t ParseSlurmSizeKiB(const std::string& s);

}  // namespace hpc::slurm
