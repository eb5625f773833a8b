// A terminal in the browser (terminal_hub.h): the owner of a Ready workspace opens a shell in its
// login pod, reads what it writes and types into it; the workspace's data plane's agent serves
// the session (opened through the relay, then polling its input and posting its output). Every
// open and close is audited.
#pragma once

namespace hpc::cp {
class RouteTable;
class RelayHub;
class TerminalHub;
namespace http {
class Auth;
}

void AddTerminalRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, TerminalHub* terminals,
                       int unreachable_after);

}  // namespace hpc::cp
