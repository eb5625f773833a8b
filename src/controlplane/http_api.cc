#include "controlplane/http_api.h"

#include <httplib.h>

#include <charconv>

#include <fmt/format.h>

#include "common/jwt.h"

namespace hpc::cp::http {
using nlohmann::json;

void Error(httplib::Response& res, int code, const std::string& message, const std::string& field) {
  json e = {{"code", code}, {"message", message}};
  if (!field.empty()) e["field"] = field;
  res.status = code;
  // Messages may quote what a client sent; bytes that are not UTF-8 are replaced, never thrown on.
  res.set_content(json{{"error", e}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", "application/json");
}

void FieldError(httplib::Response& res, const std::string& message) {
  Error(res, 400, message, message.substr(0, message.find(':')));
}

void Ok(httplib::Response& res, const json& body, int code) {
  res.status = code;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", "application/json");
}

std::optional<int64_t> ParseInteger(const std::string& text, int64_t min, int64_t max) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) return std::nullopt;
  return v;
}

bool IntegerParam(const httplib::Request& req, httplib::Response& res, const std::string& name, int64_t min,
                  int64_t max, int64_t* out) {
  const std::string v = req.get_param_value(name);
  if (v.empty()) return true;  // `name=` as a form sends it: not given
  auto parsed = ParseInteger(v, min, max);
  if (!parsed) {
    Error(res, 400, fmt::format("{} must be an integer {}-{} (got \"{}\")", name, min, max, v), name);
    return false;
  }
  *out = *parsed;
  return true;
}

std::optional<json> Body(const httplib::Request& req, httplib::Response& res) {
  json j = json::parse(req.body, nullptr, false);
  if (j.is_discarded()) {
    Error(res, 400, "request body is not valid JSON", "body");
    return std::nullopt;
  }
  if (!j.is_object()) {
    Error(res, 400, "request body must be a JSON object", "body");
    return std::nullopt;
  }
  return j;
}

std::optional<Principal> Authenticate(Store* store, const httplib::Request& req, httplib::Response& res) {
  std::string h = req.get_header_value("Authorization");
  if (h.rfind("Bearer ", 0) != 0 || h.size() <= 7) {
    Error(res, 401, "missing bearer token (Authorization: Bearer <token>)");
    return std::nullopt;
  }
  auto p = store->LookupToken(jwt::Sha256Hex(h.substr(7)));
  if (!p.ok()) {
    Error(res, 503, "store unavailable: " + p.status().message());
    return std::nullopt;
  }
  if (!*p) {
    Error(res, 401, "unknown token");
    return std::nullopt;
  }
  return **p;
}

bool RequireProject(const Principal& p, const std::string& project, httplib::Response& res) {
  if (p.role == Role::kAgent || !p.MemberOf(project)) {
    Error(res, 403, fmt::format("{} is not a member of project {}", p.subject, project));
    return false;
  }
  return true;
}

bool RequireAgentFor(const Principal& p, const std::string& data_plane, httplib::Response& res) {
  if (p.role != Role::kAgent || p.subject != data_plane) {
    Error(res, 403, fmt::format("only data plane {}'s agent may do this", data_plane));
    return false;
  }
  return true;
}

bool RequireAdmin(const Principal& p, httplib::Response& res) {
  if (p.role != Role::kAdmin) {
    Error(res, 403, "admin role required");
    return false;
  }
  return true;
}

std::optional<json> AgentBody(Store* store, const httplib::Request& req, httplib::Response& res) {
  auto p = Authenticate(store, req, res);
  if (!p || !RequireAgentFor(*p, req.matches[1], res)) return std::nullopt;
  return Body(req, res);
}

bool RequireSlurmDataPlane(Store* store, const std::string& name, int unreachable_after, httplib::Response& res) {
  auto dps = store->DataPlanes();
  if (!dps.ok()) {
    Error(res, 503, dps.status().message());
    return false;
  }
  for (const auto& dp : *dps) {
    if (dp.name == name && dp.OffersSlurm() && jwt::UnixNow() - dp.last_report <= unreachable_after) {
      return true;
    }
  }
  Error(res, 409, "data plane " + name + " is not Healthy with Slurm", "dataPlane");
  return false;
}

}  // namespace hpc::cp::http
