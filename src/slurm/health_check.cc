#include "slurm/health_check.h"

#include <cctype>
#include <sstream>

#include <fmt/format.h>

#include "health_check_script.h"  // generated from health_check.sh

namespace hpc::slurm {

std::string HealthCheckScript() { return kHealthCheckScript; }

std::string HealthCheckConfig(const api::HealthChecksSpec& h, const std::vector<api::Dataset>& datasets, bool munge,
                              int gpus) {
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
  if (gpus > 0) o << "GPUS=" << gpus << "\n";  // only where there are: other nodesets' settings stay as they were
  return o.str();
}

std::string HealthCheckScriptKey(const std::string& nodeset, const std::string& check) {
  return nodeset + "." + check + ".check";
}

namespace {

// A small count: digits only, at most 9 of them; -1 for anything else (an empty field included).
int64_t SmallCount(const std::string& s) {
  if (s.empty() || s.size() > 9) return -1;
  for (char c : s) {
    if (!isdigit(static_cast<unsigned char>(c))) return -1;
  }
  return std::stoll(s);
}

std::vector<std::string> Fields(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string f; std::getline(in, f, sep);) out.push_back(f);
  if (!text.empty() && text.back() == sep) out.emplace_back();
  return out;
}

// "bus,util,used,total,temp;..." as the program writes it; malformed entries are dropped.
std::vector<GpuSample> ParseGpuSamples(const std::string& text) {
  std::vector<GpuSample> gpus;
  for (const auto& entry : Fields(text, ';')) {
    std::vector<std::string> f = Fields(entry, ',');
    if (f.size() != 5 || f[0].empty() || f[0].size() > 16) continue;
    if (f[0].find_first_not_of("0123456789abcdef:.") != std::string::npos) continue;
    GpuSample g;
    g.bus_id = f[0];
    g.utilization_percent = static_cast<int>(SmallCount(f[1]));
    g.memory_used_mib = SmallCount(f[2]);
    g.memory_total_mib = SmallCount(f[3]);
    g.temperature_celsius = static_cast<int>(SmallCount(f[4]));
    gpus.push_back(std::move(g));
  }
  return gpus;
}

}  // namespace

HealthReport ParseHealthReport(const std::string& extra) {
  HealthReport r;
  const std::string prefix = kHealthReportPrefix;
  if (extra.rfind(prefix, 0) != 0) return r;
  std::string rest = extra.substr(prefix.size());
  // The GPUs' numbers after the outcome's '|' (an outcome never holds one).
  std::vector<GpuSample> gpus;
  if (size_t bar = rest.find('|'); bar != std::string::npos) {
    const std::string tail = rest.substr(bar + 1);
    if (tail.rfind("gpus=", 0) == 0) gpus = ParseGpuSamples(tail.substr(5));
    rest.resize(bar);
  }
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
    r.gpus = std::move(gpus);
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
  r.gpus = std::move(gpus);
  return r;
}

}  // namespace hpc::slurm
