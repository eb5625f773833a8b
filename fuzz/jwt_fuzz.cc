// libFuzzer target: token parsing — JWT verification (workspace tokens), base64url, and the
// control plane's job cursor, all of which read strings that clients send.
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/jwt.h"
#include "server/store.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  (void)hpc::jwt::Verify(text, "fuzz-key-0123456789abcdef0123456789", 1700000000);
  (void)hpc::jwt::Base64UrlDecode(text);
  (void)hpc::cp::JobCursor::Decode(text);
  return 0;
}
