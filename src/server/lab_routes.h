// JupyterLab in a workspace, through the server: /projects/{p}/workspaces/{id}/lab/... is its
// owner's JupyterLab, which the workspace's data plane's agent runs in the login pod as the
// workspace's user (when its environment has JupyterLab) and reaches on the data plane. HTTP
// requests travel through the relay; WebSockets (kernels, terminals) through tunnels the agent
// opens back to the server (tunnel_hub.h). Only the workspace's user: the console's session (its
// state-changing requests from this site only) or a bearer token; never an admin.
#pragma once

namespace hpc::cp {
class RouteTable;
class RelayHub;
class TunnelHub;
namespace http {
class Auth;
}

// The JupyterLab paths.
void AddLabRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, TunnelHub* tunnels, int unreachable_after);

}  // namespace hpc::cp
