#include "common/jwt.h"

#include <openssl/sha.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <nlohmann/json.hpp>

namespace hpc::jwt {

std::string Base64Encode(const std::string& data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

std::string Base64UrlEncode(const std::string& data) {
  std::string out = Base64Encode(data);
  for (auto& c : out) {
    if (c == '+')
      c = '-';
    else if (c == '/')
      c = '_';
  }
  while (!out.empty() && out.back() == '=') out.pop_back();
  return out;
}

Result<std::string> Base64UrlDecode(const std::string& data) {
  std::string in = data;
  for (auto& c : in) {
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
  }
  size_t pad = (4 - in.size() % 4) % 4;
  if (pad == 3) return Status::Error("invalid base64url length");
  in.append(pad, '=');
  std::string out(in.size() / 4 * 3 + 1, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(in.data()), static_cast<int>(in.size()));
  if (n < 0) return Status::Error("invalid base64url data");
  out.resize(static_cast<size_t>(n) - pad);
  return out;
}

Result<std::string> Base64Decode(const std::string& data) {
  std::string url = data;
  while (!url.empty() && url.back() == '=') url.pop_back();
  for (auto& c : url) {
    if (c == '-' || c == '_') return Status::Error("invalid base64 data");
    if (c == '+')
      c = '-';
    else if (c == '/')
      c = '_';
  }
  return Base64UrlDecode(url);
}

static std::string HmacSha256(const std::string& key, const std::string& msg) {
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(msg.data()),
       msg.size(), mac, &len);
  return std::string(reinterpret_cast<char*>(mac), len);
}

std::string Sign(const Claims& claims, const std::string& key) {
  nlohmann::json header = {{"alg", "HS256"}, {"typ", "JWT"}};
  nlohmann::json payload = {{"exp", claims.expires_at}, {"iat", claims.issued_at}, {"sun", claims.user}};
  std::string signing_input = Base64UrlEncode(header.dump()) + "." + Base64UrlEncode(payload.dump());
  return signing_input + "." + Base64UrlEncode(HmacSha256(key, signing_input));
}

Result<Claims> Verify(const std::string& token, const std::string& key, int64_t now) {
  auto d1 = token.find('.');
  auto d2 = token.find('.', d1 == std::string::npos ? d1 : d1 + 1);
  if (d1 == std::string::npos || d2 == std::string::npos) return Status::Error("token: not three parts");
  std::string signing_input = token.substr(0, d2);
  ASSIGN_OR_RETURN(std::string sig, Base64UrlDecode(token.substr(d2 + 1)));
  std::string expect = HmacSha256(key, signing_input);
  if (sig.size() != expect.size() || CRYPTO_memcmp(sig.data(), expect.data(), sig.size()) != 0) {
    return Status::Error("token: bad signature");
  }
  ASSIGN_OR_RETURN(std::string payload, Base64UrlDecode(token.substr(d1 + 1, d2 - d1 - 1)));
  auto j = nlohmann::json::parse(payload, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return Status::Error("token: payload is not JSON");
  Claims c;
  c.user = j.value("sun", "");
  c.issued_at = j.value("iat", int64_t{0});
  c.expires_at = j.value("exp", int64_t{0});
  if (c.expires_at <= now) return Status::Error("token: expired");
  return c;
}

Result<std::string> RandomBytes(size_t n) {
  std::string out(n, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(out.data()), static_cast<int>(n)) != 1) {
    return Status::Error("OpenSSL RAND_bytes failed");
  }
  return out;
}

Result<std::string> RandomHex(size_t n) {
  ASSIGN_OR_RETURN(std::string raw, RandomBytes(n));
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (unsigned char c : raw) {
    out += kDigits[c >> 4];
    out += kDigits[c & 0xf];
  }
  return out;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string Sha256Hex(const std::string& data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char b : digest) {
    out += hex[b >> 4];
    out += hex[b & 15];
  }
  return out;
}

Result<std::string> NewApiToken() {
  ASSIGN_OR_RETURN(std::string raw, RandomBytes(32));
  return "hpc_" + Base64UrlEncode(raw);
}

}  // namespace hpc::jwt
