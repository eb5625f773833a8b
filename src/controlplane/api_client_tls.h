// An HTTP client for the control plane's URL: http:// or https://, verifying an https server
// against `ca_file` when given (the system's CAs otherwise). Verification is never turned off.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

namespace hpc::cp {

inline std::unique_ptr<httplib::Client> ApiHttpClient(const std::string& server, const std::string& ca_file) {
  auto c = std::make_unique<httplib::Client>(server);
  if (!ca_file.empty()) c->set_ca_cert_path(ca_file);
  c->enable_server_certificate_verification(true);
  c->set_tcp_nodelay(true);
  return c;
}

}  // namespace hpc::cp
