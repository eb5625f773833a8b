#include "runtime/kubernetes/server_version.h"

#include <cctype>
#include <string>

#include <fmt/format.h>

namespace hpc::runtime::kubernetes {

namespace {

// The leading digits of a version field ("34+" -> 34); -1 when there are none.
int LeadingNumber(const std::string& s) {
  size_t n = 0;
  while (n < s.size() && n < 4 && std::isdigit(static_cast<unsigned char>(s[n]))) ++n;
  return n == 0 ? -1 : std::stoi(s.substr(0, n));
}

}  // namespace

Status CheckServerVersion(const nlohmann::json& version) {
  if (!version.is_object()) return Status::Error("the API server's /version is not an object");
  const int major = LeadingNumber(version.value("major", ""));
  const int minor = LeadingNumber(version.value("minor", ""));
  const std::string shown =
      version.value("gitVersion", fmt::format("{}.{}", version.value("major", "?"), version.value("minor", "?")));
  if (major < 0 || minor < 0) {
    return Status::Errorf("the API server's /version names no major and minor version (gitVersion \"{}\")", shown);
  }
  if (major > 1 || (major == 1 && minor >= kMinimumMinor)) return Status::Ok();
  return Status::FailedPrecondition(
      fmt::format("Kubernetes {} is too old: hpcplane needs 1.{} or later (native sidecars, 1.29, run the login "
                  "pods' sackd; exec with stdin over WebSocket, 1.30, runs the operator's Slurm commands)",
                  shown, kMinimumMinor));
}

}  // namespace hpc::runtime::kubernetes
