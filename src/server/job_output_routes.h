// A job's stdout and stderr as the console shows them: read on the job's data plane by its
// agent (agent/job_output.h) through the relay (relay_hub.h), for the job's own user and admins only.
#pragma once

namespace hpc::cp {
class RouteTable;
class RelayHub;
namespace http {
class Auth;
}

void AddJobOutputRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, int unreachable_after);

}  // namespace hpc::cp
