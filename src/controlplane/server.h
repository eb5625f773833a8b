// The control plane's REST API (`hpcplane server`): JSON under /api/v1, the OpenAPI document
// at /api/v1/openapi.json. Every path needs a bearer token; users see only projects they
// belong to, agents act only for their own data plane, admins manage tokens and flags.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "common/result.h"
#include "controlplane/store.h"

namespace httplib {
class Server;
}

namespace hpc::cp {

inline constexpr const char* kFlagHpcJobs = "EnableHPCJobs";

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (see Server::port())
  int unreachable_after_seconds = 15;  // a data plane whose reports stop for this long
  size_t max_body_bytes = 4 << 20;     // larger request bodies are refused with 413 unread
};

// "HOST:PORT" with a port 0-65535 (0: any free port); anything else is an error naming it.
Result<ServerOptions> ParseListenAddress(const std::string& host_port);

class Server {
 public:
  Server(Store* store, ServerOptions opts);
  ~Server();
  // Binds; returns the port.
  Result<int> Bind();
  // Serves until Stop(); call after Bind().
  void Serve();
  void Stop();

 private:
  void Routes();
  Store* store_;
  ServerOptions opts_;
  std::unique_ptr<httplib::Server> http_;
};

// Creates the first admin token if the store has none for `subject`; returns it, or "" when
// one existed. The caller writes it to a 0600 file.
Result<std::string> BootstrapToken(Store* store, const std::string& subject, Role role,
                                   const std::vector<std::string>& projects = {});

}  // namespace hpc::cp
