// A project's HPC jobs: the history (filters, cursor paging, export), one job with its
// statistics and script, and submissions through the API (sbatch with whitelisted options, run
// by the data plane's agent in the workspace's login pod).
#pragma once

namespace hpc::cp {
class RouteTable;
class ServerMetrics;
namespace http {
class Auth;
}

void AddJobRoutes(RouteTable& s, http::Auth* authn, int unreachable_after);

}  // namespace hpc::cp
