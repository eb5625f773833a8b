// The CLI's side of the control plane API: where the server is, the caller's token, and one
// call returning the parsed answer or the API's own error message.
#pragma once

#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/result.h"

namespace hpc::cli {

struct ApiArgs {
  std::string server = "http://127.0.0.1:8080";
  std::string token_file;
  std::string ca_file;
};

// The code of an API error answer, from its HTTP status (the inverse of the server's mapping,
// server/http_api.cc), so the CLI exits as the server classified the failure.
Status StatusForHttpError(int http_status, std::string message);

// --token-file, else $HPCPLANE_TOKEN.
Result<std::string> ReadToken(const ApiArgs& a);
// GET/POST/PUT/DELETE against the API.
Result<nlohmann::json> Call(const ApiArgs& a, const std::string& method, const std::string& path,
                            const nlohmann::json& body = nullptr);
// --server and --token-file, defaulted from $HPCPLANE_SERVER and $HPCPLANE_TOKEN_FILE.
void AddApiOptions(CLI::App* c, ApiArgs* a);

}  // namespace hpc::cli
