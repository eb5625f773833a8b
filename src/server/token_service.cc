#include "server/token_service.h"

#include <algorithm>

#include "api/codec.h"
#include "common/jwt.h"
#include "server/http_api.h"
#include "server/submission_service.h"

namespace hpc::cp {
using nlohmann::json;

namespace {

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("", why).WithField(field);
}

// The principal a creation body asks for (subject, role, projects), checked.
Result<Principal> RequestedPrincipal(const json& body) {
  if (body.contains("subject") && !body["subject"].is_string()) return Bad("subject", "subject must be a string");
  if (body.contains("role") && !body["role"].is_string()) return Bad("role", "role must be a string");
  std::string subject = body.value("subject", "");
  if (!http::ValidName(subject)) return Bad("subject", "subject must be a lowercase name (got \"" + subject + "\")");
  auto role = ParseRole(body.value("role", ""));
  if (!role) return Bad("role", "role must be admin, user, agent or metrics");
  std::vector<std::string> projects;
  if (body.contains("projects")) {
    if (!body["projects"].is_array()) return Bad("projects", "projects must be a list of names");
    for (const auto& pr : body["projects"]) {
      if (!pr.is_string() || !http::ValidName(pr.get<std::string>())) {
        return Bad("projects", "projects must be a list of names");
      }
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
    return Bad("ttl", "ttl must be a duration from 1s to 3650d (\"90m\", \"12h\", \"30d\" or seconds)");
  }
  return *seconds;
}

}  // namespace

TokenService::TokenService(TokenStore* store, Options options) : store_(store), options_(std::move(options)) {
  if (!options_.now) options_.now = jwt::UnixNow;
  if (!options_.secret) options_.secret = jwt::NewApiToken;
}

Result<TokenService::Created> TokenService::Create(const std::string& creator, const json& body) {
  Created out;
  ASSIGN_OR_RETURN(out.info.principal, RequestedPrincipal(body));
  out.info.created_at = options_.now();
  out.info.created_by = creator;
  ASSIGN_OR_RETURN(int64_t ttl, RequestedTtl(body));
  if (ttl) out.info.expires_at = out.info.created_at + ttl;
  auto secret = options_.secret();
  if (!secret.ok()) return StoreUnavailable(secret.status());
  out.secret = *secret;
  const std::string digest = jwt::Sha256Hex(out.secret);
  if (Status st = store_->CreateToken(digest, out.info); !st.ok()) return StoreUnavailable(st);
  out.info.id = digest.substr(0, 16);
  return out;
}

Result<std::vector<TokenInfo>> TokenService::List(const Principal& caller) {
  auto tokens = store_->ListTokens(caller.role == Role::kAdmin ? "" : caller.subject);
  if (!tokens.ok()) return StoreUnavailable(tokens.status());
  return *tokens;
}

Status TokenService::Revoke(const Principal& caller, const std::string& id) {
  if (caller.role != Role::kAdmin) {
    auto own = store_->ListTokens(caller.subject);
    if (!own.ok()) return StoreUnavailable(own.status());
    bool mine = std::any_of(own->begin(), own->end(), [&](const TokenInfo& t) { return t.id == id; });
    if (!mine) return Status::NotFound("no token " + id + " of " + caller.subject);
  }
  auto found = store_->RevokeToken(id, options_.now());
  if (!found.ok()) return StoreUnavailable(found.status());
  if (!*found) return Status::NotFound("no token " + id);
  return Status::Ok();
}

}  // namespace hpc::cp
