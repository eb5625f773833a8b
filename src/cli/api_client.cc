#include "cli/api_client.h"

#include <httplib.h>

#include <cstdlib>

#include <fmt/format.h>

#include "common/files.h"
#include "common/http_client.h"

namespace hpc::cli {
using nlohmann::json;

Status StatusForHttpError(int http_status, std::string message) {
  switch (http_status) {
    case 400:
    case 405:
    case 413:
    case 414:
    case 431:
      return Status::InvalidArgument("", message);
    case 401:
      return Status::Unauthenticated(std::move(message));
    case 403:
      return Status::PermissionDenied(std::move(message));
    case 404:
      return Status::NotFound(std::move(message));
    case 409:
      return Status::Conflict(std::move(message));
    case 429:  // the server sheds load; the same request later succeeds
    case 502:
    case 503:
    case 504:
      return Status::Unavailable(std::move(message));
    default:
      return http_status >= 500 ? Status::Internal(std::move(message)) : Status::Error(std::move(message));
  }
}

Result<std::string> ReadToken(const ApiArgs& a) {
  if (const char* t = std::getenv("HPCPLANE_TOKEN"); t && a.token_file.empty()) return std::string(t);
  if (a.token_file.empty()) return Status::Unauthenticated("no API token: give --token-file or set HPCPLANE_TOKEN");
  ASSIGN_OR_RETURN(std::string t, files::Read(a.token_file));
  while (!t.empty() && (t.back() == '\n' || t.back() == ' ')) t.pop_back();
  return t;
}

Result<json> Call(const ApiArgs& a, const std::string& method, const std::string& path, const json& body) {
  ASSIGN_OR_RETURN(std::string token, ReadToken(a));
  auto client = HttpClientFor(a.server, a.ca_file);
  httplib::Client& cli = *client;
  cli.set_bearer_token_auth(token);
  cli.set_read_timeout(60);
  httplib::Result res = method == "GET"      ? cli.Get(path)
                        : method == "PUT"    ? cli.Put(path, body.dump(), "application/json")
                        : method == "DELETE" ? cli.Delete(path)
                                             : cli.Post(path, body.dump(), "application/json");
  if (!res) return Status::Unavailable(fmt::format("{}: {}", a.server, httplib::to_string(res.error())));
  json j = json::parse(res->body, nullptr, false);
  if (res->status >= 400) {
    std::string msg = !j.is_discarded() && j.contains("error") ? j["error"].value("message", res->body) : res->body;
    return StatusForHttpError(res->status, fmt::format("{} ({})", msg, res->status));
  }
  if (j.is_discarded()) return Status::Errorf("{}: answer is not JSON", path);
  return j;
}

void AddApiOptions(CLI::App* c, ApiArgs* a) {
  if (const char* s = std::getenv("HPCPLANE_SERVER")) a->server = s;
  if (const char* f = std::getenv("HPCPLANE_TOKEN_FILE")) a->token_file = f;
  c->add_option("--server", a->server, "Control plane URL (env HPCPLANE_SERVER)");
  c->add_option("--token-file", a->token_file, "File with an API token (env HPCPLANE_TOKEN_FILE, or HPCPLANE_TOKEN)");
  if (const char* f = std::getenv("HPCPLANE_CA_FILE")) a->ca_file = f;
  c->add_option("--ca-file", a->ca_file, "PEM CA certificate that verifies an https:// server (env HPCPLANE_CA_FILE)");
}

}  // namespace hpc::cli
