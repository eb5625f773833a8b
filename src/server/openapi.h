// The OpenAPI 3.1 document of the REST API, served at /api/v1/openapi.json. What each operation
// is for and answers is written by hand once, in openapi_base.json (compiled in); what the
// server's route table already says is added from it, so the two cannot disagree: each path's
// parameters with the patterns its route matches them against, an operationId for each
// operation, the answers every authenticated operation can give (401, 429; 404 for a path value
// that fails its pattern; 400 where it reads a query or a body; 403 on agent and admin paths),
// every error's JSON body, and the CSRF header of the console's state-changing requests.
#pragma once

#include <nlohmann/json.hpp>

namespace hpc::cp {
class RouteTable;

// openapi_base.json as it is written.
nlohmann::json OpenApiBase();
// The document the server serves: the base completed from `routes`.
nlohmann::json OpenApiDocument(const RouteTable& routes);

}  // namespace hpc::cp
