#include "slurm/sizes.h"

#include <cstdlib>

namespace hpc::slurm {

int64_t ParseSlurmSizeKiB(const std::string& s) {
  if (s.empty()) return 0;
  char unit = s.back();
  double v = std::atof(s.c_str());
  switch (unit) {
    case 'K':
      break;
    case 'M':
      v *= 1024;
      break;
    case 'G':
      v *= 1024.0 * 1024;
      break;
    case 'T':
      v *= 1024.0 * 1024 * 1024;
      break;
    default:
      v /= 1024;
  }
  // Beyond 2^62 KiB (or not a number at all) is garbage: 0, never an undefined conversion.
  if (!(v >= 0) || v > 4.6e18) return 0;
  return static_cast<int64_t>(v);
}

}  // namespace hpc::slurm
