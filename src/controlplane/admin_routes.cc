#include "controlplane/admin_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "common/jwt.h"
#include "controlplane/http_api.h"
#include "controlplane/route_table.h"
#include "controlplane/server.h"
#include "controlplane/submission_service.h"

namespace hpc::cp {
using http::Body;
using http::Error;
using http::kMaxUnixSeconds;
using http::Ok;
using http::ValidName;
using nlohmann::json;

namespace {

constexpr int64_t kMaxTokenTtlSeconds = 3650LL * 86400;

json TokenJson(const TokenInfo& t) {
  return {{"id", t.id},
          {"subject", t.principal.subject},
          {"role", RoleName(t.principal.role)},
          {"projects", t.principal.projects},
          {"createdAt", t.created_at},
          {"createdBy", t.created_by},
          {"expiresAt", t.expires_at ? json(t.expires_at) : json(nullptr)},
          {"lastUsed", t.last_used ? json(t.last_used) : json(nullptr)},
          {"revokedAt", t.revoked_at ? json(t.revoked_at) : json(nullptr)}};
}

// The principal a token-creation body asks for (subject, role, projects), checked.
Result<Principal> RequestedPrincipal(const json& body) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("", why).WithField(field);
  };
  if (body.contains("subject") && !body["subject"].is_string()) return bad("subject", "subject must be a string");
  if (body.contains("role") && !body["role"].is_string()) return bad("role", "role must be a string");
  std::string subject = body.value("subject", "");
  if (!ValidName(subject)) return bad("subject", "subject must be a lowercase name (got \"" + subject + "\")");
  auto role = ParseRole(body.value("role", ""));
  if (!role) return bad("role", "role must be admin, user, agent or metrics");
  std::vector<std::string> projects;
  if (body.contains("projects")) {
    if (!body["projects"].is_array()) return bad("projects", "projects must be a list of names");
    for (const auto& pr : body["projects"]) {
      if (!pr.is_string() || !ValidName(pr.get<std::string>()))
        return bad("projects", "projects must be a list of names");
      projects.push_back(pr.get<std::string>());
    }
  }
  return Principal{subject, *role, projects};
}

// The token's lifetime from "ttl": a duration ("90m", "12h", "30d") or seconds; 0 when none.
Result<int64_t> RequestedTtl(const json& body) {
  if (!body.contains("ttl")) return int64_t{0};
  const json& ttl = body["ttl"];
  auto seconds = ttl.is_string()            ? api::ParseDurationSeconds(ttl.get<std::string>())
                 : ttl.is_number_unsigned() ? Result<int64_t>(ttl.get<int64_t>())
                                            : Result<int64_t>(Status::Error("not a duration"));
  if (!seconds.ok() || *seconds < 1 || *seconds > kMaxTokenTtlSeconds) {
    return Status::InvalidArgument("", "ttl must be a duration from 1s to 3650d (\"90m\", \"12h\", \"30d\" or seconds)")
        .WithField("ttl");
  }
  return *seconds;
}

using httplib::Request;
using httplib::Response;

void GetFlags(FlagStore* store, Response& res) {
  auto flags = store->Flags();
  if (!flags.ok()) return Error(res, StoreUnavailable(flags.status()));
  json out = {{kFlagHpcJobs, false}};
  for (const auto& [k, v] : *flags) out[k] = v;
  Ok(res, {{"flags", out}});
}

void SetFlag(http::Auth* authn, const Principal& p, const Request& req, Response& res) {
  auto body = Body(req, res);
  if (!body) return;
  if (!body->contains("value") || !(*body)["value"].is_boolean()) {
    return Error(res, 400, "value must be true or false", "value");
  }
  if (Status st = authn->store()->SetFlag(req.matches[1], (*body)["value"].get<bool>()); !st.ok()) {
    return Error(res, StoreUnavailable(st));
  }
  authn->Audit(p.subject, req, "flag.set", req.matches[1], (*body)["value"].dump());
  Ok(res, {{"name", req.matches[1]}, {"value", (*body)["value"]}});
}

void CreateToken(http::Auth* authn, const Principal& p, const Request& req, Response& res) {
  auto body = Body(req, res);
  if (!body) return;
  auto principal = RequestedPrincipal(*body);
  if (!principal.ok()) return Error(res, principal.status());
  TokenInfo t;
  t.principal = *principal;
  t.created_at = jwt::UnixNow();
  t.created_by = p.subject;
  auto ttl = RequestedTtl(*body);
  if (!ttl.ok()) return Error(res, ttl.status());
  if (*ttl) t.expires_at = t.created_at + *ttl;
  auto token = jwt::NewApiToken();
  if (!token.ok()) return Error(res, StoreUnavailable(token.status()));
  const std::string digest = jwt::Sha256Hex(*token);
  if (Status st = authn->store()->CreateToken(digest, t); !st.ok()) return Error(res, StoreUnavailable(st));
  t.id = digest.substr(0, 16);
  authn->Audit(p.subject, req, "token.create", t.id,
               fmt::format("subject {} role {}{}", t.principal.subject, RoleName(t.principal.role),
                           t.expires_at ? fmt::format(" expires {}", t.expires_at) : ""));
  json out = TokenJson(t);
  out["token"] = *token;  // the only time the secret is shown
  Ok(res, out, 201);
}

// Admins see every token; others their own. Never the secret or its digest.
void ListTokens(TokenStore* store, const Principal& p, Response& res) {
  auto tokens = store->ListTokens(p.role == Role::kAdmin ? "" : p.subject);
  if (!tokens.ok()) return Error(res, StoreUnavailable(tokens.status()));
  json out = json::array();
  for (const auto& t : *tokens) out.push_back(TokenJson(t));
  Ok(res, {{"tokens", out}});
}

void RevokeToken(http::Auth* authn, const Principal& p, const Request& req, Response& res) {
  TokenStore* store = authn->store();
  const std::string id = req.matches[1];
  // Others may revoke only their own; whether someone else's id exists is not told.
  if (p.role != Role::kAdmin) {
    auto own = store->ListTokens(p.subject);
    if (!own.ok()) return Error(res, StoreUnavailable(own.status()));
    bool mine = std::any_of(own->begin(), own->end(), [&](const TokenInfo& t) { return t.id == id; });
    if (!mine) return Error(res, 404, "no token " + id + " of " + p.subject);
  }
  auto found = store->RevokeToken(id, jwt::UnixNow());
  if (!found.ok()) return Error(res, StoreUnavailable(found.status()));
  if (!*found) return Error(res, 404, "no token " + id);
  authn->Audit(p.subject, req, "token.revoke", id);
  Ok(res, {{"id", id}, {"revoked", true}});
}

void ListAudit(AuditStore* store, const Request& req, Response& res) {
  int64_t limit = 100, before = 0;
  if (!http::IntegerParam(req, res, "limit", 1, 1000, &limit) ||
      !http::IntegerParam(req, res, "before", 1, kMaxUnixSeconds * 1000000, &before)) {
    return;
  }
  auto entries = store->ListAudit(static_cast<int>(limit), before);
  if (!entries.ok()) return Error(res, StoreUnavailable(entries.status()));
  json out = json::array();
  for (const auto& e : *entries) {
    out.push_back({{"atMicros", e.at_us},
                   {"at", e.at_us / 1000000},
                   {"actor", e.actor},
                   {"action", e.action},
                   {"target", e.target},
                   {"detail", e.detail},
                   {"remote", e.remote}});
  }
  json page = {{"entries", out}};
  page["nextBefore"] = static_cast<int64_t>(out.size()) == limit ? json(entries->back().at_us) : json(nullptr);
  Ok(res, page);
}

}  // namespace

void AddAdminRoutes(RouteTable& s, http::Auth* authn) {
  Store* store = authn->store();
  s.Get("/api/v1/flags",
        http::Authenticated(authn, [store](const Principal&, const Request&, Response& res) { GetFlags(store, res); }));
  s.Put(R"(/api/v1/flags/([A-Za-z][A-Za-z0-9]*))",
        http::AdminOnly(
            authn, [authn](const Principal& p, const Request& req, Response& res) { SetFlag(authn, p, req, res); }));
  s.Post("/api/v1/tokens", http::AdminOnly(authn, [authn](const Principal& p, const Request& req, Response& res) {
           CreateToken(authn, p, req, res);
         }));
  s.Get("/api/v1/tokens", http::Authenticated(authn, [store](const Principal& p, const Request&, Response& res) {
          ListTokens(store, p, res);
        }));
  s.Delete(R"(/api/v1/tokens/([0-9a-f]{16}))",
           http::Authenticated(authn, [authn](const Principal& p, const Request& req, Response& res) {
             RevokeToken(authn, p, req, res);
           }));
  s.Get("/api/v1/audit", http::AdminOnly(authn, [store](const Principal&, const Request& req, Response& res) {
          ListAudit(store, req, res);
        }));
}

}  // namespace hpc::cp
