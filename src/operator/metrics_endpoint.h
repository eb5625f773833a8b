// The data plane daemon's /metrics endpoint (`up --metrics-listen HOST:PORT`): Prometheus text
// for whoever presents the bearer token kept in the cluster's metrics.token (0600; Prometheus
// reads it with `authorization: credentials_file`). Nothing else is served.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"

namespace httplib {
class Server;
}

namespace hpc::op {

class MetricsEndpoint {
 public:
  // Creates `token_file` with a new token when it does not exist, binds and serves.
  static Result<std::unique_ptr<MetricsEndpoint>> Start(const std::string& host, int port,
                                                        const std::string& token_file,
                                                        std::function<std::string()> render);
  ~MetricsEndpoint();
  int port() const { return port_; }

 private:
  MetricsEndpoint() = default;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace hpc::op
