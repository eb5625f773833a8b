// The live cluster: agents post their data plane's live view (live_cluster.h) every few
// seconds; admins read the latest one, marked stale when it is old, and the history of the
// data plane's nodesets for charts.
#pragma once

namespace hpc::cp {
class RouteTable;
namespace http {
class Auth;
}

// A view older than `stale_after` seconds is marked stale.
void AddLiveClusterRoutes(RouteTable& s, http::Auth* authn, int stale_after);

}  // namespace hpc::cp
