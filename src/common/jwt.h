// HS256 JSON Web Tokens in the form Slurm's auth/jwt accepts: {"exp","iat","sun"}.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "common/result.h"

namespace hpc::jwt {

struct Claims {
  std::string user;  // "sun": the Slurm user name
  int64_t issued_at = 0;
  int64_t expires_at = 0;
};

std::string Base64UrlEncode(const std::string& data);
// Standard base64 with padding (RFC 4648 section 4), as Kubernetes Secrets' data holds it.
std::string Base64Encode(const std::string& data);
Result<std::string> Base64Decode(const std::string& data);
Result<std::string> Base64UrlDecode(const std::string& data);

std::string Sign(const Claims& claims, const std::string& key);
// Verifies signature and expiry against `now` (unix seconds); returns the claims.
Result<Claims> Verify(const std::string& token, const std::string& key, int64_t now);

// Random bytes from OpenSSL's CSPRNG, for munge and JWT keys.
Result<std::string> RandomBytes(size_t n);
// `n` random bytes as lowercase hex (2n characters): ids nobody can guess, generated passwords.
Result<std::string> RandomHex(size_t n);

int64_t UnixNow();
// Lowercase hex SHA-256 of `data` (API tokens are stored only as this digest).
std::string Sha256Hex(const std::string& data);
// A fresh random token: 32 bytes, base64url.
Result<std::string> NewApiToken();

}  // namespace hpc::jwt
