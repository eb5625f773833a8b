// The token the operator presents to slurmrestd: a JWT for SlurmUser signed with the cluster's
// JWT key (read through the runtime), renewed well before it expires.
#pragma once

#include <string>

#include "common/jwt.h"
#include "operator/builders.h"
#include "runtime/pod_runtime.h"

namespace hpc::op {

class TokenSource {
 public:
  explicit TokenSource(runtime::PodRuntime* rt) : rt_(rt) {}
  std::string Get() {
    int64_t now = jwt::UnixNow();
    if (token_.empty() || expires_ - now < 600) {
      auto secret = rt_->GetSecret(kSecretJwt);
      if (!secret.ok() || !*secret) return "";
      const std::string& key = (*secret)->data.at("jwt_hs256.key");
      expires_ = now + 3600;
      token_ = jwt::Sign({"slurm", now, expires_}, key);
    }
    return token_;
  }

 private:
  runtime::PodRuntime* rt_;
  std::string token_;
  int64_t expires_ = 0;
};

}  // namespace hpc::op
