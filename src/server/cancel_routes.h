// Cancelling a queued or running job from the control plane (the console's Cancel, or any API
// client): the job's user or an admin asks, the job's data plane's agent runs scancel, like an
// API submission runs sbatch.
#pragma once

namespace hpc::cp {
class RouteTable;
namespace http {
class Auth;
}

void AddCancelRoutes(RouteTable& s, http::Auth* auth, int unreachable_after_seconds);

}  // namespace hpc::cp
