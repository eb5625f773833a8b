// A project's batch job templates: admins define them (PUT, DELETE), the project's members
// list them and submit from them (POST /projects/{p}/jobs with `template`).
#pragma once

namespace hpc::cp {
class RouteTable;
namespace http {
class Auth;
}

void AddTemplateRoutes(RouteTable& s, http::Auth* auth);

}  // namespace hpc::cp
