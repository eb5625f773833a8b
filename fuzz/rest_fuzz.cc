// libFuzzer target: the control plane's REST handlers, served in-process on loopback over an
// in-memory store. Each input is one request: a method, a caller (no token, admin, project
// member, agent, an unknown token), a path with its query, and a body. The property besides
// "no crash" (the sanitizers): no request yields a 5xx.
#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>

#include "common/jwt.h"
#include "server/server.h"
#include "server/store.h"

namespace {

struct Fixture {
  std::unique_ptr<hpc::cp::Store> store;
  std::unique_ptr<hpc::cp::Server> server;
  std::thread serving;
  int port = 0;
  std::string tokens[5];
  std::unique_ptr<httplib::Client> client;

  Fixture() {
    store = std::move(hpc::cp::OpenStore("sqlite::memory:").value());
    tokens[0] = "";
    tokens[1] = hpc::cp::BootstrapToken(store.get(), "admin", hpc::cp::Role::kAdmin).value();
    tokens[2] = hpc::cp::BootstrapToken(store.get(), "ann", hpc::cp::Role::kUser, {"astro"}).value();
    tokens[3] = hpc::cp::BootstrapToken(store.get(), "dp1", hpc::cp::Role::kAgent).value();
    tokens[4] = "hpc_not-a-token";
    hpc::cp::DataPlane dp{"dp1", "Healthy", {}, {{"slurm/slurmctld", "22.05.8"}}, hpc::jwt::UnixNow() + 86400 * 365, 0};
    (void)store->UpsertDataPlane(dp);
    (void)store->SetFlag("EnableHPCJobs", true);
    auto project = hpc::cp::ProjectConfigFromJson("astro", {{"dataPlane", "dp1"}});
    if (project.ok()) (void)store->PutProject(*project);
    hpc::cp::ServerOptions o;
    o.port = 0;
    o.max_failed_signins = 1 << 30;  // the fuzzer's unknown tokens must not lock it out
    server = std::make_unique<hpc::cp::Server>(store.get(), o);
    port = server->Bind().value();
    serving = std::thread([this] { server->Serve(); });
    client = std::make_unique<httplib::Client>("127.0.0.1", port);
    client->set_keep_alive(true);
    client->set_tcp_nodelay(true);
    client->set_read_timeout(10);
  }
};

Fixture& Get() {
  static Fixture* f = new Fixture();  // lives for the whole run
  return *f;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  Fixture& f = Get();
  static const char* kMethods[] = {"GET", "POST", "PUT", "DELETE"};
  const std::string method = kMethods[data[0] % 4];
  const std::string& token = f.tokens[data[1] % 5];
  std::string rest(reinterpret_cast<const char*>(data + 2), size - 2);
  size_t nl = rest.find('\n');
  std::string path = rest.substr(0, nl);
  std::string body = nl == std::string::npos ? "" : rest.substr(nl + 1);
  if (path.empty() || path[0] != '/') path = "/api/v1/" + path;
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  httplib::Result r = method == "GET"    ? f.client->Get(path, headers)
                      : method == "POST" ? f.client->Post(path, headers, body, "application/json")
                      : method == "PUT"  ? f.client->Put(path, headers, body, "application/json")
                                         : f.client->Delete(path, headers, body, "application/json");
  if (r && r->status >= 500) {
    fprintf(stderr, "%s %s -> %d %s\n", method.c_str(), path.c_str(), r->status, r->body.c_str());
    std::abort();
  }
  return 0;
}
