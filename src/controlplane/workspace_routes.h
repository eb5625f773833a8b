// The control plane's workspace routes: projects' configuration (admins), launching, listing
// and stopping workspaces (project members), and the data plane's side (its agent pulls the
// desired workspaces and reports their phase).
#pragma once

#include "controlplane/store.h"

namespace httplib {
class Server;
}

namespace hpc::cp {

void AddWorkspaceRoutes(httplib::Server& s, Store* store, int unreachable_after_seconds);

}  // namespace hpc::cp
