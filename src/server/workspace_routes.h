// The control plane's workspace routes: projects' configuration (admins), launching, listing
// and stopping workspaces (project members), and the data plane's side (its agent pulls the
// desired workspaces and reports their phase).
#pragma once

#include "server/store.h"

namespace hpc::cp {
class RouteTable;
namespace http {
class Auth;
}

void AddWorkspaceRoutes(RouteTable& s, http::Auth* auth, int unreachable_after_seconds);

}  // namespace hpc::cp
