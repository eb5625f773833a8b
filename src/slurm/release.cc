#include "slurm/release.h"

#include <array>
#include <regex>

#include <fmt/format.h>

namespace hpc::slurm {

Result<Release> Release::Parse(const std::string& version) {
  static const std::regex re(R"(^(\d{2})\.(\d{2})(?:\.(\d{1,3}))?)");
  std::smatch m;
  if (!std::regex_search(version, m, re)) {
    return Status::Errorf("\"{}\" is not a Slurm release like 26.05.5", version);
  }
  Release r;
  r.major = std::stoi(m[1]);
  r.minor = std::stoi(m[2]);
  r.patch = m[3].matched ? std::stoi(m[3]) : 0;
  return r;
}

std::string Release::ToString() const { return fmt::format("{:02}.{:02}.{}", major, minor, patch); }
std::string Release::Series() const { return fmt::format("{:02}.{:02}", major, minor); }

std::string Release::RestApiPath() const { return RestPluginsByComponent() ? "/slurm/v0.0.42" : "/slurm/v0.0.38"; }

namespace {
// Slurm's major releases in order: 22.05, 23.02, 23.11, 24.05, 24.11, 25.05, 25.11, 26.05, ...
// From 2023 on two a year (May and November).
int Ordinal(const Release& r) {
  if (r.major <= 22) return 1 - (22 - r.major);  // 22.05 -> 1; older ones below
  if (r.major == 23) return r.minor >= 11 ? 3 : 2;
  return 4 + (r.major - 24) * 2 + (r.minor >= 11 ? 1 : 0);  // 24.05 -> 4, 24.11 -> 5
}
}  // namespace

Status CheckUpgrade(const Release& from, const Release& to) {
  const int a = Ordinal(from), b = Ordinal(to);
  if (b < a) {
    return Status::FailedPrecondition(
        fmt::format("Slurm {} cannot run the state of {}: Slurm does not downgrade", to.Series(), from.Series()));
  }
  if (b - a > 3) {
    return Status::FailedPrecondition(
        fmt::format("Slurm {} cannot upgrade {} directly: Slurm upgrades only from the three previous releases",
                    to.Series(), from.Series()));
  }
  return Status::Ok();
}

}  // namespace hpc::slurm
