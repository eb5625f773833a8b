// The agent's side of the relay (relay_hub.h): a long poll for the requests the control plane has
// for its data plane, and the answers it posts back. Only that data plane's own agent may use
// either.
#pragma once

namespace hpc::cp {
class RouteTable;
class RelayHub;
namespace http {
class Auth;
}

void AddRelayRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay);

}  // namespace hpc::cp
