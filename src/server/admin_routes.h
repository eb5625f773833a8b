// Administration: feature flags, API tokens (create, list, revoke) and the audit log.
#pragma once

namespace hpc::cp {
class RouteTable;
class ServerMetrics;
namespace http {
class Auth;
}

void AddAdminRoutes(RouteTable& s, http::Auth* authn);

}  // namespace hpc::cp
