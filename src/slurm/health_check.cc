#include "slurm/health_check.h"

#include <sstream>

#include <fmt/format.h>

#include "health_check_script.h"  // generated from health_check.sh

namespace hpc::slurm {

std::string HealthCheckScript() { return kHealthCheckScript; }

std::string HealthCheckConfig(const api::HealthChecksSpec& h, const std::vector<api::Dataset>& datasets, bool munge) {
  std::ostringstream o;
  o << "# hpcplane health check settings for this nodeset's workers. Do not edit: hpcplane rewrites it.\n"
    << "MUNGE=" << (munge ? 1 : 0) << "\n"
    << "TIMEOUT=" << h.timeout_seconds << "\n"
    << "MIN_FREE=" << h.min_free_percent << "\n"
    << "MAX_SKEW=" << h.max_clock_skew_seconds << "\n"
    << "DATASETS=(";
  // Mount paths are validated to letters, digits and ._-/ (api/validation.cc); quoted anyway.
  for (size_t i = 0; i < datasets.size(); ++i) o << (i ? " " : "") << "'" << datasets[i].mount_path << "'";
  o << ")\n";
  return o.str();
}

std::string HealthCheckScriptKey(const std::string& nodeset, const std::string& check) {
  return nodeset + "." + check + ".check";
}

HealthReport ParseHealthReport(const std::string& extra) {
  HealthReport r;
  const std::string prefix = kHealthReportPrefix;
  if (extra.rfind(prefix, 0) != 0) return r;
  std::string rest = extra.substr(prefix.size());
  size_t colon = rest.find(':');
  if (colon == std::string::npos || colon == 0 || colon > 12) return r;
  for (size_t i = 0; i < colon; ++i) {
    if (!isdigit(static_cast<unsigned char>(rest[i]))) return r;
  }
  int64_t at = std::stoll(rest.substr(0, colon));
  std::string outcome = rest.substr(colon + 1);
  if (outcome == "ok") {
    r.present = true;
    r.at = at;
    return r;
  }
  if (outcome.rfind("fail:", 0) != 0) return r;
  std::string what = outcome.substr(5);
  size_t sep = what.find(": ");
  r.present = true;
  r.at = at;
  r.ok = false;
  r.check = what.substr(0, sep);
  r.detail = sep == std::string::npos ? "" : what.substr(sep + 2);
  if (r.check.empty()) r.check = "unknown";
  return r;
}

}  // namespace hpc::slurm
