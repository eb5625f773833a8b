#include "server/admin_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api/codec.h"
#include "common/jwt.h"
#include "server/http_api.h"
#include "server/route_table.h"
#include "server/server.h"
#include "server/submission_service.h"
#include "server/token_service.h"

namespace hpc::cp {
using http::Body;
using http::Error;
using http::kMaxUnixSeconds;
using http::Ok;
using http::ValidName;
using nlohmann::json;

namespace {

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
    return Error(res, Status::InvalidArgument("", "value must be true or false").WithField("value"));
  }
  if (Status st = authn->store()->SetFlag(req.matches[1], (*body)["value"].get<bool>()); !st.ok()) {
    return Error(res, StoreUnavailable(st));
  }
  authn->Audit(p.subject, req, "flag.set", req.matches[1], (*body)["value"].dump());
  Ok(res, {{"name", req.matches[1]}, {"value", (*body)["value"]}});
}

void CreateToken(http::Auth* authn, TokenService* tokens, const Principal& p, const Request& req, Response& res) {
  auto body = Body(req, res);
  if (!body) return;
  auto made = tokens->Create(p.subject, *body);
  if (!made.ok()) return Error(res, made.status());
  const TokenInfo& t = made->info;
  authn->Audit(p.subject, req, "token.create", t.id,
               fmt::format("subject {} role {}{}", t.principal.subject, RoleName(t.principal.role),
                           t.expires_at ? fmt::format(" expires {}", t.expires_at) : ""));
  json out = TokenJson(t);
  out["token"] = made->secret;  // the only time the secret is shown
  Ok(res, out, 201);
}

// Admins see every token; others their own. Never the secret or its digest.
void ListTokens(TokenService* tokens, const Principal& p, Response& res) {
  auto list = tokens->List(p);
  if (!list.ok()) return Error(res, list.status());
  json out = json::array();
  for (const auto& t : *list) out.push_back(TokenJson(t));
  Ok(res, {{"tokens", out}});
}

void RevokeToken(http::Auth* authn, TokenService* tokens, const Principal& p, const Request& req, Response& res) {
  const std::string id = req.matches[1];
  if (Status s = tokens->Revoke(p, id); !s.ok()) return Error(res, s);
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
  auto tokens = std::make_shared<TokenService>(store, TokenService::Options{});
  s.Get("/api/v1/flags",
        http::Authenticated(authn, [store](const Principal&, const Request&, Response& res) { GetFlags(store, res); }));
  s.Put(R"(/api/v1/flags/([A-Za-z][A-Za-z0-9]*))",
        http::AdminOnly(
            authn, [authn](const Principal& p, const Request& req, Response& res) { SetFlag(authn, p, req, res); }));
  s.Post("/api/v1/tokens",
         http::AdminOnly(authn, [authn, tokens](const Principal& p, const Request& req, Response& res) {
           CreateToken(authn, tokens.get(), p, req, res);
         }));
  s.Get("/api/v1/tokens", http::Authenticated(authn, [tokens](const Principal& p, const Request&, Response& res) {
          ListTokens(tokens.get(), p, res);
        }));
  s.Delete(R"(/api/v1/tokens/([0-9a-f]{16}))",
           http::Authenticated(authn, [authn, tokens](const Principal& p, const Request& req, Response& res) {
             RevokeToken(authn, tokens.get(), p, req, res);
           }));
  s.Get("/api/v1/audit", http::AdminOnly(authn, [store](const Principal&, const Request& req, Response& res) {
          ListAudit(store, req, res);
        }));
}

}  // namespace hpc::cp
