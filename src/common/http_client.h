// An HTTP client for a URL: http:// or https://, verifying an https server against `ca_file`
// when given (the system's CAs otherwise). Verification is never turned off. Used by every
// client of the control plane's API: the CLI and the data plane's agent.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>

namespace hpc {

inline std::unique_ptr<httplib::Client> HttpClientFor(const std::string& url, const std::string& ca_file) {
  auto c = std::make_unique<httplib::Client>(url);
  if (!ca_file.empty()) c->set_ca_cert_path(ca_file);
  c->enable_server_certificate_verification(true);
  c->set_tcp_nodelay(true);
  return c;
}

}  // namespace hpc
