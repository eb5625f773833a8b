// What every control plane route shares: JSON answers and errors ({"error": {code, message,
// field}}), request bodies as JSON objects, and the authentication and authorisation checks.
// Each check answers the request itself (401/403/400/503) and returns false or nullopt, so a
// handler reads `if (!check) return;`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "controlplane/store.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace hpc::cp::http {

void Error(httplib::Response& res, int code, const std::string& message, const std::string& field = "");
// A "field: why" message as a 400 naming the field.
void FieldError(httplib::Response& res, const std::string& message);
void Ok(httplib::Response& res, const nlohmann::json& body, int code = 200);

// A whole decimal integer in [min, max]; nullopt for anything else (signs, spaces, overflow).
std::optional<int64_t> ParseInteger(const std::string& text, int64_t min, int64_t max);
// Query parameter `name` into *out when present and not empty; false after a 400 naming it when
// it is not an integer in [min, max].
bool IntegerParam(const httplib::Request& req, httplib::Response& res, const std::string& name, int64_t min,
                  int64_t max, int64_t* out);

// The request body as a JSON object, or a 400 naming what is wrong.
std::optional<nlohmann::json> Body(const httplib::Request& req, httplib::Response& res);

// The caller named by the bearer token, or a 401 (none, unknown) / 503 (store away).
std::optional<Principal> Authenticate(Store* store, const httplib::Request& req, httplib::Response& res);
bool RequireProject(const Principal& p, const std::string& project, httplib::Response& res);
bool RequireAgentFor(const Principal& p, const std::string& data_plane, httplib::Response& res);
bool RequireAdmin(const Principal& p, httplib::Response& res);

// For routes /api/v1/dataplanes/{name}/...: the body of a request from that data plane's own
// agent (401/403/400 answered otherwise).
std::optional<nlohmann::json> AgentBody(Store* store, const httplib::Request& req, httplib::Response& res);

// The data plane if it is Healthy, reports slurm/slurmctld and reported within
// `unreachable_after` seconds; otherwise a 409 naming it (503 if the store is away).
bool RequireSlurmDataPlane(Store* store, const std::string& name, int unreachable_after, httplib::Response& res);

}  // namespace hpc::cp::http
