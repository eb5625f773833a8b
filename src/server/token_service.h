// API tokens (POST/GET/DELETE /tokens): created by admins for a subject, a role, projects and
// an optional lifetime, their secret returned once (the store keeps only its digest); listed
// without secrets (admins every token, others their own); revoked by an admin or by their own
// subject, where someone else's id is not even said to exist. The routes authenticate, call the
// service, audit and answer by the Status's code.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "server/store.h"

namespace hpc::cp {

inline constexpr int64_t kMaxTokenTtlSeconds = 3650LL * 86400;

class TokenService {
 public:
  struct Options {
    std::function<int64_t()> now;                 // unix seconds
    std::function<Result<std::string>()> secret;  // a new token's secret
  };
  TokenService(TokenStore* store, Options options);

  struct Created {
    TokenInfo info;      // id filled in
    std::string secret;  // shown once
  };
  // The token a creation body asks for ({subject, role, projects?, ttl?}), made by `creator`.
  Result<Created> Create(const std::string& creator, const nlohmann::json& body);
  // Every token for an admin, else the caller's own; never a secret or digest.
  Result<std::vector<TokenInfo>> List(const Principal& caller);
  // Revokes token `id`: any for an admin, only their own for others (NotFound otherwise).
  Status Revoke(const Principal& caller, const std::string& id);

 private:
  TokenStore* store_;
  Options options_;
};

}  // namespace hpc::cp
