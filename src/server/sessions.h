// Browser sessions of the web console. Signing in with an API token creates a session: a random
// id the browser holds in an HttpOnly, SameSite=Strict cookie (the token itself never reaches
// script-readable storage or a URL) and a CSRF token the page sends back in X-CSRF-Token on
// every state-changing request. A session keeps the token's digest, not the token: each request
// still looks the token up, so revoking or expiring it ends its sessions too. Sessions live in
// the server's memory; a restart signs everyone out.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "common/result.h"

namespace hpc::cp {

struct Session {
  std::string id;
  std::string token_digest;
  std::string csrf;
  int64_t expires_at = 0;  // unix seconds
};

class SessionTable {
 public:
  explicit SessionTable(int64_t ttl_seconds = 12 * 3600, size_t max_sessions = 100000)
      : ttl_(ttl_seconds), max_(max_sessions) {}
  // A new session for the token with that digest, expiring ttl from `now`.
  Result<Session> Create(const std::string& token_digest, int64_t now);
  // The live session with that id; expired ones are forgotten.
  std::optional<Session> Find(const std::string& id, int64_t now);
  void Delete(const std::string& id);
  int64_t ttl_seconds() const { return ttl_; }

 private:
  const int64_t ttl_;
  const size_t max_;
  std::mutex mu_;
  std::map<std::string, Session> sessions_;
};

// The cookie that carries the session id.
inline constexpr const char* kSessionCookie = "hpcplane_session";

// The value of cookie `name` in a Cookie header ("" when absent).
std::string CookieValue(const std::string& cookie_header, const std::string& name);

}  // namespace hpc::cp
