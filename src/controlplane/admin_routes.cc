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
}  // namespace

void AddAdminRoutes(RouteTable& s, http::Auth* authn) {
  using httplib::Request;
  using httplib::Response;
  Store* store = authn->store();
  auto auth = [authn](const Request& req, Response& res) { return authn->Authenticate(req, res); };
  s.Get("/api/v1/flags", [=](const httplib::Request& req, httplib::Response& res) {
    if (!auth(req, res)) return;
    auto flags = store->Flags();
    if (!flags.ok()) return Error(res, 503, flags.status().message());
    json out = {{kFlagHpcJobs, false}};
    for (const auto& [k, v] : *flags) out[k] = v;
    Ok(res, {{"flags", out}});
  });

  s.Put(R"(/api/v1/flags/([A-Za-z][A-Za-z0-9]*))", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p || !http::RequireAdmin(*p, res)) return;
    auto body = Body(req, res);
    if (!body) return;
    if (!body->contains("value") || !(*body)["value"].is_boolean())
      return Error(res, 400, "value must be true or false", "value");
    if (Status st = store->SetFlag(req.matches[1], (*body)["value"].get<bool>()); !st.ok())
      return Error(res, 503, st.message());
    authn->Audit(p->subject, req, "flag.set", req.matches[1], (*body)["value"].dump());
    Ok(res, {{"name", req.matches[1]}, {"value", (*body)["value"]}});
  });

  s.Post("/api/v1/tokens", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p || !http::RequireAdmin(*p, res)) return;
    auto body = Body(req, res);
    if (!body) return;
    if (body->contains("subject") && !(*body)["subject"].is_string())
      return Error(res, 400, "subject must be a string", "subject");
    if (body->contains("role") && !(*body)["role"].is_string()) return Error(res, 400, "role must be a string", "role");
    std::string subject = body->value("subject", "");
    if (!ValidName(subject))
      return Error(res, 400, "subject must be a lowercase name (got \"" + subject + "\")", "subject");
    auto role = ParseRole(body->value("role", ""));
    if (!role) return Error(res, 400, "role must be admin, user, agent or metrics", "role");
    std::vector<std::string> projects;
    if (body->contains("projects")) {
      if (!(*body)["projects"].is_array()) return Error(res, 400, "projects must be a list of names", "projects");
      for (const auto& pr : (*body)["projects"]) {
        if (!pr.is_string() || !ValidName(pr.get<std::string>()))
          return Error(res, 400, "projects must be a list of names", "projects");
        projects.push_back(pr.get<std::string>());
      }
    }
    TokenInfo t;
    t.principal = {subject, *role, projects};
    t.created_at = jwt::UnixNow();
    t.created_by = p->subject;
    if (body->contains("ttl")) {
      const json& ttl = (*body)["ttl"];
      auto seconds = ttl.is_string()            ? api::ParseDurationSeconds(ttl.get<std::string>())
                     : ttl.is_number_unsigned() ? Result<int64_t>(ttl.get<int64_t>())
                                                : Result<int64_t>(Status::Error("not a duration"));
      if (!seconds.ok() || *seconds < 1 || *seconds > kMaxTokenTtlSeconds) {
        return Error(res, 400, "ttl must be a duration from 1s to 3650d (\"90m\", \"12h\", \"30d\" or seconds)", "ttl");
      }
      t.expires_at = t.created_at + *seconds;
    }
    auto token = jwt::NewApiToken();
    if (!token.ok()) return Error(res, 503, token.status().message());
    const std::string digest = jwt::Sha256Hex(*token);
    if (Status st = store->CreateToken(digest, t); !st.ok()) return Error(res, 503, st.message());
    t.id = digest.substr(0, 16);
    authn->Audit(p->subject, req, "token.create", t.id,
                 fmt::format("subject {} role {}{}", subject, RoleName(*role),
                             t.expires_at ? fmt::format(" expires {}", t.expires_at) : ""));
    json out = TokenJson(t);
    out["token"] = *token;  // the only time the secret is shown
    Ok(res, out, 201);
  });

  // Admins see every token; others their own. Never the secret or its digest.
  s.Get("/api/v1/tokens", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    auto tokens = store->ListTokens(p->role == Role::kAdmin ? "" : p->subject);
    if (!tokens.ok()) return Error(res, 503, tokens.status().message());
    json out = json::array();
    for (const auto& t : *tokens) out.push_back(TokenJson(t));
    Ok(res, {{"tokens", out}});
  });

  s.Delete(R"(/api/v1/tokens/([0-9a-f]{16}))", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p) return;
    const std::string id = req.matches[1];
    // Others may revoke only their own; whether someone else's id exists is not told.
    if (p->role != Role::kAdmin) {
      auto own = store->ListTokens(p->subject);
      if (!own.ok()) return Error(res, 503, own.status().message());
      bool mine = std::any_of(own->begin(), own->end(), [&](const TokenInfo& t) { return t.id == id; });
      if (!mine) return Error(res, 404, "no token " + id + " of " + p->subject);
    }
    auto found = store->RevokeToken(id, jwt::UnixNow());
    if (!found.ok()) return Error(res, 503, found.status().message());
    if (!*found) return Error(res, 404, "no token " + id);
    authn->Audit(p->subject, req, "token.revoke", id);
    Ok(res, {{"id", id}, {"revoked", true}});
  });

  s.Get("/api/v1/audit", [=](const httplib::Request& req, httplib::Response& res) {
    auto p = auth(req, res);
    if (!p || !http::RequireAdmin(*p, res)) return;
    int64_t limit = 100, before = 0;
    if (!http::IntegerParam(req, res, "limit", 1, 1000, &limit) ||
        !http::IntegerParam(req, res, "before", 1, kMaxUnixSeconds * 1000000, &before)) {
      return;
    }
    auto entries = store->ListAudit(static_cast<int>(limit), before);
    if (!entries.ok()) return Error(res, 503, entries.status().message());
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
  });
}

}  // namespace hpc::cp
