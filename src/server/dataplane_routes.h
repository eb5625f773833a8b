// Data planes' side of the API: the list of data planes with their state (a data plane that has
// not reported for a while is Unreachable), and what agents post: reports, job records, and the
// results of API submissions they ran.
#pragma once

namespace hpc::cp {
class RouteTable;
class ServerMetrics;
namespace http {
class Auth;
}

void AddDataPlaneRoutes(RouteTable& s, http::Auth* authn, ServerMetrics* metrics, int unreachable_after);

}  // namespace hpc::cp
