// A terminal in the browser: the owner of a Ready workspace opens a shell in its login pod, reads
// what it writes and types into it; the workspace's data plane's agent serves it. Over a
// WebSocket (GET .../workspaces/{id}/terminal?cols=&rows=, an upgrade: binary messages are the
// terminal's bytes both ways, text ones {"resize": {cols, rows}}; it closes with why the shell
// ended, or 4401 when the sign-in expires) joined through a tunnel to the agent's (wss:// where
// the server terminates TLS); or, for a client that cannot use WebSockets, over long polls
// (terminal_hub.h). Every open and close is audited.
#pragma once

namespace hpc::cp {
class RouteTable;
class RelayHub;
class TerminalHub;
class TunnelHub;
namespace http {
class Auth;
}

void AddTerminalRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, TerminalHub* terminals, TunnelHub* tunnels,
                       int unreachable_after);

}  // namespace hpc::cp
