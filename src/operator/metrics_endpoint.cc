#include "operator/metrics_endpoint.h"

#include <httplib.h>
#include <openssl/crypto.h>

#include <nlohmann/json.hpp>

#include "common/files.h"
#include "common/jwt.h"

namespace hpc::op {
namespace {

void JsonError(httplib::Response& res, int code, const std::string& message) {
  res.status = code;
  res.set_content(nlohmann::json{{"error", {{"code", code}, {"message", message}}}}.dump(
                      -1, ' ', false, nlohmann::json::error_handler_t::replace) +
                      "\n",
                  "application/json");
}

}  // namespace

Result<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(const std::string& host, int port,
                                                                const std::string& token_file,
                                                                std::function<std::string()> render) {
  if (!files::Exists(token_file)) {
    ASSIGN_OR_RETURN(std::string token, jwt::NewApiToken());
    RETURN_IF_ERROR(files::WriteAtomic(token_file, token + "\n", 0600));
  }
  ASSIGN_OR_RETURN(std::string token, files::Read(token_file));
  while (!token.empty() && (token.back() == '\n' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return Status::Errorf("{}: empty token", token_file);

  std::unique_ptr<MetricsEndpoint> e(new MetricsEndpoint());
  e->http_ = std::make_unique<httplib::Server>();
  e->http_->set_tcp_nodelay(true);
  e->http_->set_payload_max_length(1024);
  e->http_->Get("/metrics", [token, render](const httplib::Request& req, httplib::Response& res) {
    const std::string expected = "Bearer " + token;
    const std::string got = req.get_header_value("Authorization");
    if (got.size() != expected.size() || CRYPTO_memcmp(got.data(), expected.data(), got.size()) != 0) {
      return JsonError(res, 401, "a bearer token from the cluster's metrics.token is required");
    }
    res.set_content(render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  e->http_->set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty())
      JsonError(res, res.status, res.status == 404 ? "only /metrics is served here" : "bad request");
  });
  e->port_ = port == 0 ? e->http_->bind_to_any_port(host) : (e->http_->bind_to_port(host, port) ? port : -1);
  if (e->port_ < 0) return Status::Errorf("metrics: cannot listen on {}:{}", host, port);
  httplib::Server* srv = e->http_.get();
  e->thread_ = std::thread([srv] { srv->listen_after_bind(); });
  return e;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (http_) http_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace hpc::op
