// The web console: its page and files (public: they hold no data, and the sign-in form must
// load), console sessions (sign in with an API token, sign out), and the read-only API the
// console needs that the rest of the API lacked: the caller's projects and a project's job
// statistics. Everything but the static files needs a token or a session.
#pragma once

namespace hpc::cp {
class RouteTable;
namespace http {
class Auth;
}

// `secure_cookies`: the server speaks TLS, so the session cookie is marked Secure.
void AddConsoleRoutes(RouteTable& s, http::Auth* auth, bool secure_cookies);

}  // namespace hpc::cp
