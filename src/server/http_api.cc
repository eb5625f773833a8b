#include "server/http_api.h"
#include "server/submission_service.h"

#include <regex>

#include <httplib.h>

#include <charconv>
#include <chrono>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/jwt.h"
#include "common/printable.h"

namespace hpc::cp::http {
using nlohmann::json;

void Error(httplib::Response& res, int code, const std::string& message, const std::string& field) {
  // Messages may echo what a client sent: a client that prints them meets no control character.
  json e = {{"code", code}, {"message", Printable(message)}};
  if (!field.empty()) e["field"] = Printable(field);
  res.status = code;
  // Messages may quote what a client sent; bytes that are not UTF-8 are replaced, never thrown on.
  res.set_content(json{{"error", e}}.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", kJsonContentType);
}

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kAlreadyExists:
    case StatusCode::kConflict:
    case StatusCode::kFailedPrecondition:
      return 409;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kUnknown:
    case StatusCode::kInternal:
      return 500;
  }
  return 500;
}

void Error(httplib::Response& res, const Status& status) {
  Error(res, HttpStatusFor(status.code()), status.message(), status.field());
}

void Ok(httplib::Response& res, const json& body, int code) {
  res.status = code;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n", kJsonContentType);
}

std::optional<int64_t> ParseInteger(const std::string& text, int64_t min, int64_t max) {
  int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) return std::nullopt;
  return v;
}

Status IntegerQuery(const httplib::Request& req, const std::string& name, int64_t min, int64_t max, int64_t* out) {
  const std::string v = req.get_param_value(name);
  if (v.empty()) return Status::Ok();  // `name=` as a form sends it: not given
  auto parsed = ParseInteger(v, min, max);
  if (!parsed) {
    return Status::InvalidArgument("", fmt::format("{} must be an integer {}-{} (got \"{}\")", name, min, max, v))
        .WithField(name);
  }
  *out = *parsed;
  return Status::Ok();
}

bool IntegerParam(const httplib::Request& req, httplib::Response& res, const std::string& name, int64_t min,
                  int64_t max, int64_t* out) {
  Status s = IntegerQuery(req, name, min, max, out);
  if (!s.ok()) Error(res, s);
  return s.ok();
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

int64_t SignInLimiter::RetryAfter(const std::string& address, int64_t now) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = windows_.find(address);
  if (it == windows_.end() || it->second.failures < max_failures_ || now >= it->second.start + window_) return 0;
  return it->second.start + window_ - now;
}

bool SignInLimiter::Failed(const std::string& address, int64_t now) {
  std::lock_guard<std::mutex> l(mu_);
  // Bounded memory however many addresses try: expired windows go first, then everything.
  if (windows_.size() >= 10000) {
    std::erase_if(windows_, [&](const auto& w) { return now >= w.second.start + window_; });
    if (windows_.size() >= 10000) windows_.clear();
  }
  Window& w = windows_[address];
  if (now >= w.start + window_) w = {now, 0};
  return ++w.failures == max_failures_;
}

namespace {
// Equal strings, in time that does not depend on where they differ.
bool SameSecret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

// A session's caller: its credential stops working when the token or the session expires.
std::optional<Principal> WithSessionExpiry(std::optional<Principal> p, const Session& s) {
  if (p && (p->credential_expires_at == 0 || s.expires_at < p->credential_expires_at)) {
    p->credential_expires_at = s.expires_at;
  }
  return p;
}
}  // namespace

std::optional<Session> Auth::SessionOf(const httplib::Request& req) {
  if (!sessions_) return std::nullopt;
  std::string id = CookieValue(req.get_header_value("Cookie"), kSessionCookie);
  if (id.empty()) return std::nullopt;
  return sessions_->Find(id, jwt::UnixNow());
}

std::optional<Principal> Auth::Authenticate(const httplib::Request& req, httplib::Response& res) {
  std::string h = req.get_header_value("Authorization");
  if (h.empty() && sessions_ && !CookieValue(req.get_header_value("Cookie"), kSessionCookie).empty()) {
    auto s = SessionOf(req);
    if (!s) {
      Error(res, 401, "the console session expired or is unknown; sign in again");
      return std::nullopt;
    }
    // A cookie rides along on any request the browser makes; only the console's own page
    // knows the session's CSRF token.
    const bool safe = req.method == "GET" || req.method == "HEAD";
    if (!safe && !SameSecret(req.get_header_value("X-CSRF-Token"), s->csrf)) {
      Error(res, 403, "missing or wrong X-CSRF-Token header for this session");
      return std::nullopt;
    }
    return WithSessionExpiry(AuthenticateDigest(s->token_digest, req, res), *s);
  }
  if (h.rfind("Bearer ", 0) != 0 || h.size() <= 7) {
    Error(res, 401, "missing bearer token (Authorization: Bearer <token>)");
    return std::nullopt;
  }
  return AuthenticateDigest(jwt::Sha256Hex(h.substr(7)), req, res);
}

std::optional<Principal> Auth::AuthenticateDigest(const std::string& digest, const httplib::Request& req,
                                                  httplib::Response& res) {
  const int64_t now = jwt::UnixNow();
  auto t = store_->LookupToken(digest);
  if (!t.ok()) {
    Error(res, 503, "store unavailable: " + t.status().message());
    return std::nullopt;
  }
  std::string why;
  if (!*t) {
    why = "unknown token";
  } else if ((*t)->Revoked()) {
    why = fmt::format("token {} was revoked", (*t)->id);
  } else if ((*t)->Expired(now)) {
    why = fmt::format("token {} expired", (*t)->id);
  }
  if (!why.empty()) {
    // A limited address gets 429 for every further failure, unrecorded: guessing slows down and
    // the audit log is not flooded. A valid token still passes: behind a proxy or NAT, one
    // client's failures must not lock out everyone sharing its address (tokens are 256 random
    // bits; no answer helps guess one).
    if (int64_t wait = limiter_->RetryAfter(req.remote_addr, now); wait > 0) {
      res.set_header("Retry-After", std::to_string(wait));
      Error(res, 429, fmt::format("too many failed sign-ins from {}; retry in {} s", req.remote_addr, wait));
      return std::nullopt;
    }
    bool tripped = limiter_->Failed(req.remote_addr, now);
    Audit("-", req, "signin.failed", *t ? (*t)->principal.subject : "",
          why + (tripped ? "; address now rate-limited" : ""));
    Error(res, 401, why);
    return std::nullopt;
  }
  // Last use to the minute: one write a minute per token and server, not one per request (and
  // not one per concurrent request either: writers queue for SQLite's single write lock).
  if (now - (*t)->last_used >= 60 && ClaimTouch(digest, now)) {
    if (Status s = store_->TouchToken(digest, now); !s.ok())
      spdlog::warn("token {}: last use not recorded: {}", (*t)->id, s.message());
  }
  Principal p = (*t)->principal;
  p.credential_expires_at = (*t)->expires_at;
  return p;
}

std::optional<Principal> Auth::AuthenticateProxied(const httplib::Request& req, httplib::Response& res) {
  const std::string h = req.get_header_value("Authorization");
  if (h.rfind("Bearer ", 0) == 0) return Authenticate(req, res);
  auto s = SessionOf(req);
  if (!s) {
    Error(res, 401, "sign in to the console first (no console session, or it expired)");
    return std::nullopt;
  }
  const bool safe = req.method == "GET" || req.method == "HEAD";
  const std::string origin = req.get_header_value("Origin");
  const size_t scheme = origin.find("://");
  if (!safe && (scheme == std::string::npos || origin.substr(scheme + 3) != req.get_header_value("Host"))) {
    Error(res, 403, "a state-changing request through the console's proxy must come from the console's own site");
    return std::nullopt;
  }
  return WithSessionExpiry(AuthenticateDigest(s->token_digest, req, res), *s);
}

bool Auth::ClaimTouch(const std::string& digest, int64_t now) {
  std::lock_guard<std::mutex> l(touch_mu_);
  if (touched_.size() > 10000) touched_.clear();  // bounded; the worst case is one extra write
  int64_t& last = touched_[digest];
  if (now - last < 60) return false;
  last = now;
  return true;
}

std::optional<json> Auth::AgentBody(const httplib::Request& req, httplib::Response& res) {
  auto p = Authenticate(req, res);
  if (!p || !RequireAgentFor(*p, req.matches[1], res)) return std::nullopt;
  return Body(req, res);
}

void Auth::Audit(const std::string& actor, const httplib::Request& req, const std::string& action,
                 const std::string& target, const std::string& detail) {
  AuditEntry e;
  e.at_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::system_clock::now().time_since_epoch())
                .count();
  e.actor = actor, e.action = action, e.target = target, e.detail = detail, e.remote = req.remote_addr;
  if (Status s = store_->AppendAudit(e); !s.ok())
    spdlog::error("audit {} {}: not recorded: {}", action, target, s.message());
}

std::optional<JobRecord> ProjectJob(Store* store, const httplib::Request& req, const std::string& project,
                                    httplib::Response& res) {
  int64_t submit = 0;
  if (!IntegerParam(req, res, "submitTime", 0, kMaxUnixSeconds, &submit)) return std::nullopt;
  auto job_id = ParseInteger(req.matches[4], 1, INT64_MAX);
  if (!job_id) {
    Error(res, 404, "no such job in project " + project);
    return std::nullopt;
  }
  auto j = store->GetJob(req.matches[2], req.matches[3], *job_id, submit);
  if (!j.ok()) {
    Error(res, 503, j.status().message());
    return std::nullopt;
  }
  if (!*j || (*j)->project != project) {
    Error(res, 404, "no such job in project " + project);
    return std::nullopt;
  }
  return **j;
}

std::function<void(const httplib::Request&, httplib::Response&)> Authenticated(Auth* auth, CallerHandler h) {
  return [auth, h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    if (auto p = auth->Authenticate(req, res)) h(*p, req, res);
  };
}

std::function<void(const httplib::Request&, httplib::Response&)> InProject(Auth* auth, ProjectHandler h) {
  return [auth, h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    auto p = auth->Authenticate(req, res);
    if (!p) return;
    const std::string project = req.matches[1];
    if (RequireProject(*p, project, res)) h(*p, project, req, res);
  };
}

std::function<void(const httplib::Request&, httplib::Response&)> AdminOnly(Auth* auth, CallerHandler h) {
  return [auth, h = std::move(h)](const httplib::Request& req, httplib::Response& res) {
    auto p = auth->Authenticate(req, res);
    if (p && RequireAdmin(*p, res)) h(*p, req, res);
  };
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

bool RequireSlurmDataPlane(Store* store, const std::string& name, int unreachable_after, httplib::Response& res) {
  Status ready = SlurmDataPlaneReady(store, name, unreachable_after, jwt::UnixNow());
  if (!ready.ok()) Error(res, ready);
  return ready.ok();
}

bool ValidName(const std::string& s) {
  static const std::regex re("^[a-z][a-z0-9-]{0,62}$");
  return std::regex_match(s, re);
}

std::optional<WorkspaceRecord> OwnersReadyWorkspace(Store* store, const Principal& p, const std::string& project,
                                                    const std::string& id, const std::string& what,
                                                    int unreachable_after, httplib::Response& res) {
  auto w = store->GetWorkspace(id);
  if (!w.ok()) {
    Error(res, StoreUnavailable(w.status()));
    return std::nullopt;
  }
  if (!*w || (*w)->project != project) {
    Error(res, Status::NotFound(fmt::format("no workspace {} in project {}", id, project)));
    return std::nullopt;
  }
  if ((*w)->user != p.subject) {
    Error(res,
          Status::PermissionDenied(fmt::format("workspace {} is {}'s; only they may open {}", id, (*w)->user, what)));
    return std::nullopt;
  }
  if ((*w)->desired != "Running" || (*w)->phase != "Ready") {
    Error(res, Status::FailedPrecondition(fmt::format("workspace {} is {}, not Ready", id, (*w)->phase)));
    return std::nullopt;
  }
  if (!RequireSlurmDataPlane(store, (*w)->data_plane, unreachable_after, res)) return std::nullopt;
  return **w;
}

}  // namespace hpc::cp::http
