// A client of the Kubernetes API for the operator: JSON over HTTPS with a bearer token, retries
// where the API says to (429 after Retry-After, 5xx and broken connections with exponential
// backoff), and watches streamed event by event. Errors keep the API's meaning: 404 NotFound,
// 409 AlreadyExists or Conflict, 401/403, 400/422 InvalidArgument, and Unavailable once retries
// are spent.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace httplib {
class SSLClient;
}

namespace hpc::runtime::kubernetes {

// A kubeconfig user's exec plugin, as cloud providers' sign-in helpers are (kubectl's
// client.authentication.k8s.io ExecCredential, v1 or v1beta1): run for a bearer token.
struct ExecPlugin {
  std::string command;  // with a slash: relative to the kubeconfig's folder; without: found on PATH
  std::vector<std::string> args;
  std::map<std::string, std::string> env;
  std::string api_version;  // client.authentication.k8s.io/v1 or /v1beta1
};
struct ExecCredential {
  std::string token;
  int64_t expires_at = 0;  // unix seconds; 0: the plugin said nothing (kept until a 401)
};
// Runs the plugin (KUBERNETES_EXEC_INFO set, never interactive) and reads its ExecCredential:
// its status.token and expirationTimestamp. An error names the plugin and what was wrong, never
// the token.
Result<ExecCredential> RunExecPlugin(const ExecPlugin& plugin);

// Where the API is and who the operator is to it.
struct Connection {
  std::string server;              // https://HOST:PORT
  std::string ca_pem;              // the CA that signed the server's certificate; empty: the system's CAs
  std::string token_file;          // read at every request: service account tokens are rotated
  std::string token;               // used when there is no token file (a kubeconfig's `token:`)
  std::optional<ExecPlugin> exec;  // a kubeconfig's exec plugin: its token, run again near expiry
  // A client certificate and its key (PEM), as kubeadm's and kind's admin kubeconfigs have:
  // presented in the TLS handshake; with a token as well, both are sent.
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string namespace_name = "default";
};

// The current context of a kubeconfig: server, certificate-authority(-data), token, tokenFile
// or an exec plugin, and/or client-certificate(-data) with client-key(-data), namespace.
Result<Connection> LoadKubeconfig(const std::string& path);

// HOST and PORT of an https:// server address (an IPv6 host in brackets; 443 when unsaid).
struct ServerAddress {
  std::string host;
  std::string port;
};
Result<ServerAddress> ServerAddressOf(const std::string& server);
// The pod's service account (/var/run/secrets/kubernetes.io/serviceaccount) and
// KUBERNETES_SERVICE_HOST/PORT, as every in-cluster client finds the API.
Result<Connection> InClusterConnection();

struct RetryPolicy {
  int attempts = 6;
  std::chrono::milliseconds first_backoff{100};
  std::chrono::milliseconds max_backoff{5000};
  std::chrono::seconds max_retry_after{30};
};

struct WatchEvent {
  std::string type;  // ADDED, MODIFIED, DELETED, BOOKMARK
  nlohmann::json object;
};

// How a watch ended: the server closed it (resume from `resource_version`), or the version
// was too old (410 Gone: list again, then watch from the list's version).
struct WatchEnd {
  bool expired = false;
  std::string resource_version;
};

class ApiClient {
 public:
  explicit ApiClient(Connection connection, RetryPolicy retry = {});
  ~ApiClient();

  const Connection& connection() const { return conn_; }
  // The token every request carries, read again each time (a token file is rotated); an exec
  // plugin's is kept until a minute before it expires, or until the API answers 401.
  Result<std::string> BearerToken() const;

  Result<nlohmann::json> Get(const std::string& path);
  Result<std::string> GetText(const std::string& path);
  Result<nlohmann::json> Post(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> Put(const std::string& path, const nlohmann::json& body);
  Result<nlohmann::json> MergePatch(const std::string& path, const nlohmann::json& patch);
  // NotFound when there was nothing to delete.
  Status Delete(const std::string& path);

  // Watches `path` (a collection, with its query) from `resource_version`, with bookmarks;
  // `on_event` returns false to stop. Returns when the server ends the stream, after
  // `timeout_seconds`, or when stopped.
  Result<WatchEnd> Watch(const std::string& path, const std::string& resource_version, int timeout_seconds,
                         const std::function<bool(const WatchEvent&)>& on_event);
  // Ends the watches in flight (their connections shut down; each returns as stopped) and every
  // later one at once: this client is closing. Thread-safe. A watch whose connection was still
  // being opened may miss it: call again until its caller has returned.
  void CancelWatches();

 private:
  struct Response {
    int status = 0;
    std::string body;
    std::string retry_after;
  };
  Result<Response> Send(const std::string& method, const std::string& path, const std::string& body,
                        const std::string& content_type);
  Result<std::string> Call(const std::string& method, const std::string& path, const std::string& body = "",
                           const std::string& content_type = "application/json");
  std::unique_ptr<httplib::SSLClient> NewHttpClient() const;

  Connection conn_;
  RetryPolicy retry_;
  mutable std::mutex exec_mu_;  // the exec plugin's credential, shared by every thread
  mutable std::optional<ExecCredential> exec_credential_;
  std::mutex mu_;  // one request at a time on the shared connection
  std::unique_ptr<httplib::SSLClient> http_;
  std::mutex watches_mu_;  // the watches' own connections, for CancelWatches
  std::set<httplib::SSLClient*> watches_;
  bool watches_cancelled_ = false;
};

// What the operator's requests say they come from ("hpcplane/VERSION"), as the API's audit log
// and its per-client metrics show it.
std::string UserAgent();

// Percent-encodes a query parameter's value (label selectors hold '=' and ',').
std::string QueryEscape(const std::string& value);

}  // namespace hpc::runtime::kubernetes
