#include "runtime/kubernetes/api_client.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <random>
#include <thread>

#include <fmt/format.h>

#include "common/files.h"
#include "common/jwt.h"
#include "common/subprocess.h"

namespace hpc::runtime::kubernetes {

using nlohmann::json;

namespace {

constexpr size_t kMaxTokenBytes = 64 * 1024;
constexpr size_t kMaxCaBytes = 1 << 20;
constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// A CA bundle from memory, for the TLS client (which takes ownership).
X509_STORE* StoreFromPem(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (!bio) return nullptr;
  X509_STORE* store = X509_STORE_new();
  int added = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    added += X509_STORE_add_cert(store, cert) == 1 ? 1 : 0;
    X509_free(cert);
  }
  BIO_free(bio);
  if (added == 0) {
    X509_STORE_free(store);
    return nullptr;
  }
  return store;
}

// The API's own explanation of an error (a Status object), else the body's start.
std::string ErrorMessage(const std::string& body) {
  auto j = json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("message") && j["message"].is_string()) return j["message"];
  return body.substr(0, 200);
}

Status StatusForHttp(int code, const std::string& what, const std::string& body) {
  const std::string message = fmt::format("{}: {} {}", what, code, ErrorMessage(body));
  auto j = json::parse(body, nullptr, false);
  const std::string reason = j.is_object() ? j.value("reason", "") : "";
  switch (code) {
    case 400:
    case 422:
      return Status::InvalidArgument("", message);
    case 401:
      return Status::Unauthenticated(message);
    case 403:
      return Status::PermissionDenied(message);
    case 404:
      return Status::NotFound(message);
    case 409:
      return reason == "AlreadyExists" ? Status::AlreadyExists(message) : Status::Conflict(message);
    case 410:
      return Status::FailedPrecondition(message);
    default:
      return code == 429 || code >= 500 ? Status::Unavailable(message) : Status::Error(message);
  }
}

bool Retryable(int code) { return code == 429 || code == 500 || code == 502 || code == 503 || code == 504; }

// The client certificate and key of a connection, parsed (null when absent or not PEM).
struct ClientCredentials {
  X509* cert = nullptr;
  EVP_PKEY* key = nullptr;
  explicit ClientCredentials(const Connection& c) {
    if (c.client_cert_pem.empty() || c.client_key_pem.empty()) return;
    BIO* cert_bio = BIO_new_mem_buf(c.client_cert_pem.data(), static_cast<int>(c.client_cert_pem.size()));
    BIO* key_bio = BIO_new_mem_buf(c.client_key_pem.data(), static_cast<int>(c.client_key_pem.size()));
    cert = cert_bio ? PEM_read_bio_X509(cert_bio, nullptr, nullptr, nullptr) : nullptr;
    key = key_bio ? PEM_read_bio_PrivateKey(key_bio, nullptr, nullptr, nullptr) : nullptr;
    BIO_free(cert_bio);
    BIO_free(key_bio);
  }
  ~ClientCredentials() {
    X509_free(cert);
    EVP_PKEY_free(key);
  }
  ClientCredentials(const ClientCredentials&) = delete;
  ClientCredentials& operator=(const ClientCredentials&) = delete;
  // Both parse and the key is the certificate's.
  bool usable() const { return cert && key && X509_check_private_key(cert, key) == 1; }
};

bool ClientCertificateParses(const Connection& c) { return ClientCredentials(c).usable(); }

std::string RelativeTo(const std::string& base_file, const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  return (std::filesystem::path(base_file).parent_path() / path).string();
}

}  // namespace

std::string UserAgent() { return std::string("hpcplane/") + HPCPLANE_VERSION; }

std::string QueryEscape(const std::string& value) {
  std::string out;
  for (unsigned char ch : value) {
    if (isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out += static_cast<char>(ch);
    } else {
      out += fmt::format("%{:02X}", ch);
    }
  }
  return out;
}

namespace {

constexpr const char* kExecV1 = "client.authentication.k8s.io/v1";
constexpr const char* kExecV1Beta1 = "client.authentication.k8s.io/v1beta1";
// A plugin that asks for a person at a terminal cannot serve a daemon.
constexpr std::chrono::seconds kExecPluginTimeout{60};
// A token this close to its expiry is fetched again before it is sent.
constexpr int64_t kExecRefreshMarginSeconds = 60;

Result<ExecPlugin> ExecPluginOf(const YAML::Node& exec, const std::string& path, const std::string& context) {
  auto refused = [&](const std::string& why) {
    return Status::InvalidArgument("",
                                   fmt::format("kubeconfig {}: user of context \"{}\": exec: {}", path, context, why));
  };
  ExecPlugin p;
  p.api_version = exec["apiVersion"].as<std::string>("");
  if (p.api_version != kExecV1 && p.api_version != kExecV1Beta1) {
    return refused(fmt::format("apiVersion \"{}\" (supported: {}, {})", p.api_version, kExecV1, kExecV1Beta1));
  }
  p.command = exec["command"].as<std::string>("");
  if (p.command.empty()) return refused("no command");
  // As kubectl does: a relative path with a slash is the kubeconfig's folder's.
  if (p.command.find('/') != std::string::npos) {
    p.command = std::filesystem::path(RelativeTo(path, p.command)).lexically_normal().string();
  }
  for (const auto& a : exec["args"]) p.args.push_back(a.as<std::string>());
  for (const auto& e : exec["env"]) {
    const std::string name = e["name"].as<std::string>("");
    if (name.empty()) return refused("an env entry has no name");
    p.env[name] = e["value"].as<std::string>("");
  }
  if (exec["interactiveMode"] && exec["interactiveMode"].as<std::string>("") == "Always") {
    return refused("interactiveMode Always: the plugin needs a person at a terminal, which hpcplane never has");
  }
  return p;
}

// RFC 3339 as the plugins write it (2026-12-06T10:00:00Z, fractions and offsets allowed).
std::optional<int64_t> ParseRfc3339(const std::string& text) {
  struct tm tm {};
  const char* rest = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (rest == nullptr) return std::nullopt;
  if (*rest == '.') {
    ++rest;
    while (isdigit(static_cast<unsigned char>(*rest))) ++rest;
  }
  int64_t offset = 0;
  if (*rest == '+' || *rest == '-') {
    int hours = 0, minutes = 0;
    if (sscanf(rest + 1, "%2d:%2d", &hours, &minutes) != 2) return std::nullopt;
    offset = (*rest == '+' ? 1 : -1) * (hours * 3600 + minutes * 60);
    rest += 6;
  } else if (*rest == 'Z' || *rest == 'z') {
    ++rest;
  } else {
    return std::nullopt;
  }
  if (*rest != '\0') return std::nullopt;
  return static_cast<int64_t>(timegm(&tm)) - offset;
}

}  // namespace

Result<ExecCredential> RunExecPlugin(const ExecPlugin& plugin) {
  std::vector<std::string> argv = {plugin.command};
  argv.insert(argv.end(), plugin.args.begin(), plugin.args.end());
  RunOptions o;
  o.timeout = kExecPluginTimeout;
  o.extra_env = plugin.env;
  o.extra_env["KUBERNETES_EXEC_INFO"] =
      json{{"apiVersion", plugin.api_version}, {"kind", "ExecCredential"}, {"spec", {{"interactive", false}}}}.dump();
  auto failed = [&](const std::string& why) {
    return Status::Unauthenticated(fmt::format("kubeconfig exec plugin {}: {}", plugin.command, why));
  };
  auto r = RunProcess(argv, o);
  if (!r.ok()) return failed(r.status().message());
  if (r->timed_out) return failed(fmt::format("no answer within {} s", kExecPluginTimeout.count()));
  if (r->exit_code != 0) {
    return failed(fmt::format("exit {}: {}", r->exit_code, r->err.substr(0, std::min<size_t>(r->err.size(), 300))));
  }
  const json j = json::parse(r->out, nullptr, false);
  if (!j.is_object()) return failed("its output is not an ExecCredential (not JSON)");
  if (j.value("kind", "") != "ExecCredential" || j.value("apiVersion", "") != plugin.api_version) {
    return failed(fmt::format("its output is a {} {}, not an ExecCredential {}", j.value("apiVersion", "?"),
                              j.value("kind", "?"), plugin.api_version));
  }
  const json status = j.value("status", json::object());
  ExecCredential c;
  c.token = status.is_object() ? status.value("token", "") : "";
  if (c.token.empty()) {
    return failed(status.is_object() && status.contains("clientCertificateData")
                      ? "it gives a client certificate, which hpcplane does not take from a plugin: give a token"
                      : "its ExecCredential has no status.token");
  }
  if (status.contains("expirationTimestamp")) {
    auto at = ParseRfc3339(status.value("expirationTimestamp", ""));
    if (!at) return failed("status.expirationTimestamp is not an RFC 3339 time");
    c.expires_at = *at;
  }
  return c;
}

Result<Connection> LoadKubeconfig(const std::string& path) {
  ASSIGN_OR_RETURN(std::string text, files::ReadAtMost(path, kMaxCaBytes));
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("", fmt::format("kubeconfig {}: {}", path, e.what()));
  }
  try {
    const std::string current = root["current-context"] ? root["current-context"].as<std::string>() : "";
    if (current.empty()) return Status::InvalidArgument("", fmt::format("kubeconfig {}: no current-context", path));
    auto named = [&](const char* list, const std::string& name) -> YAML::Node {
      for (const auto& item : root[list]) {
        if (item["name"] && item["name"].as<std::string>() == name) return item;
      }
      return YAML::Node();
    };
    YAML::Node context = named("contexts", current)["context"];
    if (!context) return Status::InvalidArgument("", fmt::format("kubeconfig {}: no context \"{}\"", path, current));
    YAML::Node cluster = named("clusters", context["cluster"].as<std::string>(""))["cluster"];
    YAML::Node user = named("users", context["user"].as<std::string>(""))["user"];
    if (!cluster)
      return Status::InvalidArgument("", fmt::format("kubeconfig {}: context \"{}\" has no cluster", path, current));
    Connection c;
    c.server = cluster["server"].as<std::string>("");
    if (c.server.rfind("https://", 0) != 0) {
      return Status::InvalidArgument("", fmt::format("kubeconfig {}: server \"{}\": only https:// is supported "
                                                     "(a bearer token is never sent in the clear)",
                                                     path, c.server));
    }
    if (cluster["insecure-skip-tls-verify"] && cluster["insecure-skip-tls-verify"].as<bool>(false)) {
      return Status::InvalidArgument("", fmt::format("kubeconfig {}: insecure-skip-tls-verify is refused", path));
    }
    if (cluster["certificate-authority-data"]) {
      ASSIGN_OR_RETURN(c.ca_pem, jwt::Base64Decode(cluster["certificate-authority-data"].as<std::string>()));
    } else if (cluster["certificate-authority"]) {
      ASSIGN_OR_RETURN(c.ca_pem, files::ReadAtMost(RelativeTo(path, cluster["certificate-authority"].as<std::string>()),
                                                   kMaxCaBytes));
    }
    if (user && user["tokenFile"]) {
      c.token_file = RelativeTo(path, user["tokenFile"].as<std::string>());
    } else if (user && user["token"]) {
      c.token = user["token"].as<std::string>();
    }
    // The certificate and its key, each inline (-data, base64) or in a file.
    auto pem = [&](const char* key, std::string* out) -> Status {
      const std::string data_key = std::string(key) + "-data";
      if (user && user[data_key]) {
        ASSIGN_OR_RETURN(*out, jwt::Base64Decode(user[data_key].as<std::string>()));
      } else if (user && user[key]) {
        ASSIGN_OR_RETURN(*out, files::ReadAtMost(RelativeTo(path, user[key].as<std::string>()), kMaxCaBytes));
      }
      return Status::Ok();
    };
    RETURN_IF_ERROR(pem("client-certificate", &c.client_cert_pem));
    RETURN_IF_ERROR(pem("client-key", &c.client_key_pem));
    if (!c.client_cert_pem.empty() && !c.client_key_pem.empty() && !ClientCertificateParses(c)) {
      return Status::InvalidArgument(
          "", fmt::format("kubeconfig {}: user of context \"{}\": client-certificate and client-key are not a PEM "
                          "certificate and its private key",
                          path, current));
    }
    if (c.client_cert_pem.empty() != c.client_key_pem.empty()) {
      return Status::InvalidArgument("", fmt::format("kubeconfig {}: user of context \"{}\" has a client {} without "
                                                     "its {}",
                                                     path, current, c.client_cert_pem.empty() ? "key" : "certificate",
                                                     c.client_cert_pem.empty() ? "certificate" : "key"));
    }
    if (user && user["exec"] && c.token_file.empty() && c.token.empty()) {
      ASSIGN_OR_RETURN(ExecPlugin plugin, ExecPluginOf(user["exec"], path, current));
      c.exec = std::move(plugin);
    }
    if (c.token_file.empty() && c.token.empty() && c.client_cert_pem.empty() && !c.exec) {
      return Status::InvalidArgument("", fmt::format("kubeconfig {}: user of context \"{}\" has no token, tokenFile, "
                                                     "exec plugin or client certificate",
                                                     path, current));
    }
    if (context["namespace"]) c.namespace_name = context["namespace"].as<std::string>();
    return c;
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument("", fmt::format("kubeconfig {}: {}", path, e.what()));
  }
}

Result<Connection> InClusterConnection() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (!host || !port) {
    return Status::FailedPrecondition(
        "not in a Kubernetes pod (KUBERNETES_SERVICE_HOST is not set): give --kubeconfig FILE");
  }
  Connection c;
  const std::string h = host;
  c.server = fmt::format("https://{}:{}", h.find(':') != std::string::npos ? "[" + h + "]" : h, port);
  c.token_file = std::string(kServiceAccountDir) + "/token";
  ASSIGN_OR_RETURN(c.ca_pem, files::ReadAtMost(std::string(kServiceAccountDir) + "/ca.crt", kMaxCaBytes));
  auto ns = files::ReadAtMost(std::string(kServiceAccountDir) + "/namespace", 256);
  if (ns.ok() && !ns->empty()) c.namespace_name = *ns;
  return c;
}

ApiClient::ApiClient(Connection connection, RetryPolicy retry)
    : conn_(std::move(connection)), retry_(retry), http_(NewHttpClient()) {}

ApiClient::~ApiClient() = default;

Result<ServerAddress> ServerAddressOf(const std::string& server) {
  const std::string prefix = "https://";
  if (server.rfind(prefix, 0) != 0) return Status::InvalidArgument("", fmt::format("server {}: not https", server));
  std::string rest = server.substr(prefix.size());
  rest = rest.substr(0, rest.find('/'));
  ServerAddress a;
  if (!rest.empty() && rest[0] == '[') {  // [IPv6]:port
    const size_t close = rest.find(']');
    if (close == std::string::npos) return Status::InvalidArgument("", fmt::format("server {}: bad address", server));
    a.host = rest.substr(1, close - 1);
    a.port = rest.size() > close + 2 ? rest.substr(close + 2) : "443";
  } else {
    const size_t colon = rest.rfind(':');
    a.host = rest.substr(0, colon);
    a.port = colon == std::string::npos ? "443" : rest.substr(colon + 1);
  }
  if (a.host.empty() || a.port.empty() || !std::all_of(a.port.begin(), a.port.end(), ::isdigit) || a.port.size() > 5) {
    return Status::InvalidArgument("", fmt::format("server {}: bad address", server));
  }
  return a;
}

std::unique_ptr<httplib::SSLClient> ApiClient::NewHttpClient() const {
  // The address was checked when the connection was made (LoadKubeconfig, InClusterConnection).
  const ServerAddress at = ServerAddressOf(conn_.server).value_or(ServerAddress{conn_.server, "443"});
  const int port = std::atoi(at.port.c_str());
  std::unique_ptr<httplib::SSLClient> c;
  ClientCredentials credentials(conn_);
  if (credentials.usable()) {
    // The TLS context takes its own references.
    c = std::make_unique<httplib::SSLClient>(at.host, port, credentials.cert, credentials.key);
  } else {
    c = std::make_unique<httplib::SSLClient>(at.host, port);
  }
  if (!conn_.ca_pem.empty()) {
    if (X509_STORE* store = StoreFromPem(conn_.ca_pem)) c->set_ca_cert_store(store);
  }
  c->enable_server_certificate_verification(true);
  c->set_connection_timeout(5);
  c->set_read_timeout(60);
  c->set_write_timeout(30);
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  return c;
}

Result<std::string> ApiClient::BearerToken() const {
  if (conn_.exec) {
    std::lock_guard<std::mutex> lock(exec_mu_);
    const int64_t now =
        std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
    if (!exec_credential_ ||
        (exec_credential_->expires_at != 0 && exec_credential_->expires_at - kExecRefreshMarginSeconds <= now)) {
      ASSIGN_OR_RETURN(ExecCredential c, RunExecPlugin(*conn_.exec));
      exec_credential_ = std::move(c);
    }
    return exec_credential_->token;
  }
  if (conn_.token_file.empty()) return conn_.token;
  ASSIGN_OR_RETURN(std::string token, files::ReadAtMost(conn_.token_file, kMaxTokenBytes));
  while (!token.empty() && isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  return token;
}

Result<ApiClient::Response> ApiClient::Send(const std::string& method, const std::string& path, const std::string& body,
                                            const std::string& content_type) {
  ASSIGN_OR_RETURN(std::string token, BearerToken());
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", UserAgent()}};
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  std::lock_guard<std::mutex> lock(mu_);
  auto send = [&]() -> httplib::Result {
    if (method == "POST") return http_->Post(path.c_str(), headers, body, content_type.c_str());
    if (method == "PUT") return http_->Put(path.c_str(), headers, body, content_type.c_str());
    if (method == "PATCH") return http_->Patch(path.c_str(), headers, body, content_type.c_str());
    if (method == "DELETE") return http_->Delete(path.c_str(), headers);
    return http_->Get(path.c_str(), headers);
  };
  httplib::Result r = send();
  if (!r) {
    // A broken keep-alive connection: the next request opens a new one.
    http_ = NewHttpClient();
    return Status::Unavailable(fmt::format("{} {}: {}", method, path, httplib::to_string(r.error())));
  }
  return Response{r->status, r->body, r->get_header_value("Retry-After")};
}

Result<std::string> ApiClient::Call(const std::string& method, const std::string& path, const std::string& body,
                                    const std::string& content_type) {
  static thread_local std::mt19937 jitter(std::random_device{}());
  std::chrono::milliseconds backoff = retry_.first_backoff;
  Status last = Status::Ok();
  bool asked_plugin_again = false;
  for (int attempt = 1; attempt <= retry_.attempts; ++attempt) {
    auto r = Send(method, path, body, content_type);
    std::chrono::milliseconds wait = backoff;
    if (r.ok()) {
      if (r->status >= 200 && r->status < 300) return r->body;
      last = StatusForHttp(r->status, method + " " + path, r->body);
      if (r->status == 401 && conn_.exec && !asked_plugin_again) {
        // The plugin's token was revoked or rotated early: ask it again, once, at no attempt's cost.
        std::lock_guard<std::mutex> lock(exec_mu_);
        exec_credential_.reset();
        asked_plugin_again = true;
        --attempt;
        continue;
      }
      if (!Retryable(r->status)) return last;
      if (r->status == 429 && !r->retry_after.empty()) {
        // The server says when: wait that long (bounded), not our own guess.
        const long seconds = std::strtol(r->retry_after.c_str(), nullptr, 10);
        wait = std::chrono::seconds(std::clamp<long>(seconds, 0, retry_.max_retry_after.count()));
      }
    } else {
      last = r.status();
      // No credential to send (an exec plugin that failed): retrying the request will not help.
      if (last.code() == StatusCode::kUnauthenticated) return last;
    }
    if (attempt == retry_.attempts) break;
    std::uniform_int_distribution<int> spread(0, static_cast<int>(wait.count() / 5));
    std::this_thread::sleep_for(wait + std::chrono::milliseconds(spread(jitter)));
    backoff = std::min(backoff * 2, retry_.max_backoff);
  }
  return Status::Unavailable(fmt::format("{} (after {} attempts)", last.message(), retry_.attempts));
}

Result<json> ApiClient::Get(const std::string& path) {
  ASSIGN_OR_RETURN(std::string body, Call("GET", path));
  auto j = json::parse(body, nullptr, false);
  if (j.is_discarded()) return Status::Unavailable(fmt::format("GET {}: the answer is not JSON", path));
  return j;
}

Result<std::string> ApiClient::GetText(const std::string& path) { return Call("GET", path); }

Result<json> ApiClient::Post(const std::string& path, const json& body) {
  ASSIGN_OR_RETURN(std::string out, Call("POST", path, body.dump()));
  return json::parse(out, nullptr, false);
}

Result<json> ApiClient::Put(const std::string& path, const json& body) {
  ASSIGN_OR_RETURN(std::string out, Call("PUT", path, body.dump()));
  return json::parse(out, nullptr, false);
}

Result<json> ApiClient::MergePatch(const std::string& path, const json& patch) {
  ASSIGN_OR_RETURN(std::string out, Call("PATCH", path, patch.dump(), "application/merge-patch+json"));
  return json::parse(out, nullptr, false);
}

Status ApiClient::Delete(const std::string& path) { return Call("DELETE", path).status(); }

Result<WatchEnd> ApiClient::Watch(const std::string& path, const std::string& resource_version, int timeout_seconds,
                                  const std::function<bool(const WatchEvent&)>& on_event) {
  ASSIGN_OR_RETURN(std::string token, BearerToken());
  const char sep = path.find('?') == std::string::npos ? '?' : '&';
  const std::string url = fmt::format("{}{}watch=true&allowWatchBookmarks=true&timeoutSeconds={}&resourceVersion={}",
                                      path, sep, timeout_seconds, QueryEscape(resource_version));
  // Its own connection: a watch holds it for minutes.
  auto http = NewHttpClient();
  http->set_read_timeout(timeout_seconds + 30);
  WatchEnd end;
  end.resource_version = resource_version;
  {
    std::lock_guard<std::mutex> lock(watches_mu_);
    if (watches_cancelled_) return end;
    watches_.insert(http.get());
  }
  struct Unregister {
    ApiClient* self;
    httplib::SSLClient* http;
    ~Unregister() {
      std::lock_guard<std::mutex> lock(self->watches_mu_);
      self->watches_.erase(http);
    }
  } unregister{this, http.get()};
  std::string pending;
  bool stopped = false;
  Status failed = Status::Ok();
  int code = 0;
  std::string error_body;
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", UserAgent()}};
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto r = http->Get(
      url.c_str(), headers,
      [&](const httplib::Response& response) {
        code = response.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (code != 200) {
          error_body.append(data, std::min(n, size_t{4096}));
          return true;
        }
        pending.append(data, n);
        size_t nl;
        while ((nl = pending.find('\n')) != std::string::npos) {
          std::string line = pending.substr(0, nl);
          pending.erase(0, nl + 1);
          if (line.empty()) continue;
          auto j = json::parse(line, nullptr, false);
          if (!j.is_object() || !j.contains("type") || !j.contains("object")) {
            failed = Status::Unavailable(fmt::format("watch {}: a line that is not an event", path));
            return false;
          }
          WatchEvent e{j["type"].get<std::string>(), j["object"]};
          if (e.type == "ERROR") {
            if (e.object.value("code", 0) == 410) {
              end.expired = true;
            } else {
              failed = Status::Unavailable(fmt::format("watch {}: {}", path, e.object.value("message", "error")));
            }
            return false;
          }
          const std::string rv = e.object["metadata"].value("resourceVersion", "");
          if (!rv.empty()) end.resource_version = rv;
          if (!on_event(e)) {
            stopped = true;
            return false;
          }
        }
        return true;
      });
  if (!failed.ok()) return failed;
  if (code == 410) {
    end.expired = true;
    return end;
  }
  if (code != 0 && code != 200) return StatusForHttp(code, "watch " + path, error_body);
  if (!r && !stopped && !end.expired) {
    {
      std::lock_guard<std::mutex> lock(watches_mu_);
      if (watches_cancelled_) return end;  // shut down by CancelWatches
    }
    // The stream broke (server gone, timeout): resume from the last version seen.
    if (code == 0) return Status::Unavailable(fmt::format("watch {}: {}", path, httplib::to_string(r.error())));
  }
  return end;
}

void ApiClient::CancelWatches() {
  std::lock_guard<std::mutex> lock(watches_mu_);
  watches_cancelled_ = true;
  // httplib's stop() shuts an in-flight request's socket down from another thread.
  for (httplib::SSLClient* http : watches_) http->stop();
}

}  // namespace hpc::runtime::kubernetes
