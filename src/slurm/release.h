// Which Slurm a cluster runs: what it is configured and talked to with depends on it
// (slurmrestd's plugins and API version, slurm.conf's options). Compute environments decide it
// (api/environments.h): bookworm 22.05, trixie 24.11, sid 26.05.
#pragma once

#include <string>

#include "common/result.h"

namespace hpc::slurm {

struct Release {
  int major = 22;  // year
  int minor = 5;   // month
  int patch = 8;

  // "26.05.5", or a Debian package version such as "26.05.5-1" or "22.05.8-4+deb12u3".
  static Result<Release> Parse(const std::string& version);
  bool AtLeast(int year, int month) const { return major > year || (major == year && minor >= month); }
  std::string ToString() const;  // "26.05.5"
  std::string Series() const;    // "26.05"
  bool operator==(const Release&) const = default;

  // slurmrestd's OpenAPI path prefix hpcplane speaks with this release: v0.0.38 through 23.02,
  // then the oldest data parser 26.05 still serves, v0.0.42 (24.11 serves v0.0.40 to v0.0.42).
  std::string RestApiPath() const;
  // Whether slurmrestd is started with the openapi/slurmctld plugin (23.11 on) rather than the
  // versioned openapi/v0.0.38 plugin.
  bool RestPluginsByComponent() const { return AtLeast(23, 11); }
  // Whether slurmctld answers HTTP on its own port (25.11 on): /livez, /readyz and, with
  // MetricsType=metrics/openmetrics, /metrics/{jobs,nodes,partitions,scheduler}.
  bool ControllerServesHttp() const { return AtLeast(25, 11); }
  // Whether Slurm authenticates itself (23.11 on): auth/slurm and cred/slurm with a shared key,
  // its daemons and sackd serving clients on a local socket, no munged anywhere.
  bool AuthSlurm() const { return AtLeast(23, 11); }
};

// Releases that an upgrade may cross (Slurm supports upgrades from the three previous major
// releases: 23.02, 23.11 or 24.05 to 24.11; 24.11, 25.05 or 25.11 to 26.05): FailedPrecondition
// naming both when `to` cannot take over `from`'s state (a downgrade, or too far a jump).
Status CheckUpgrade(const Release& from, const Release& to);

}  // namespace hpc::slurm
