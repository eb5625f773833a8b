#include "controlplane/lab_routes.h"

#include <httplib.h>

#include <array>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "controlplane/http_api.h"
#include "controlplane/relay.h"
#include "controlplane/route_table.h"
#include "controlplane/tunnel_hub.h"
#include "controlplane/tunnel_routes.h"
#include "controlplane/websocket_upgrade.h"

namespace hpc::cp {
using http::Error;
using httplib::Request;
using httplib::Response;
using nlohmann::json;

namespace {

constexpr const char* kLab = R"(/projects/([a-z][a-z0-9-]*)/workspaces/([a-z][a-z0-9-]*)/lab(/.*)?)";
// The first request of a workspace starts its JupyterLab (seconds; a minute on a cold image).
constexpr auto kLabRequestTimeout = std::chrono::seconds(90);

// What JupyterLab is told of a request: never the console's cookie or credentials.
constexpr std::array<const char*, 6> kRequestHeaders = {"Accept",   "Content-Type",      "If-None-Match",
                                                        "If-Match", "If-Modified-Since", "X-Requested-With"};
// What the browser is told of JupyterLab's answer (Content-Type is the body's).
constexpr std::array<const char*, 8> kAnswerHeaders = {
    "Cache-Control",       "ETag",          "Last-Modified", "Location", "Content-Encoding",
    "Content-Disposition", "Content-Range", "Expires"};

struct LabContext {
  http::Auth* auth;
  RelayHub* relay;
  TunnelHub* tunnels;
  int unreachable_after;
  bool tls;
};

struct LabCaller {
  Principal principal;
  WorkspaceRecord workspace;
};

std::optional<LabCaller> Caller(const LabContext& c, const Request& req, Response& res) {
  auto p = c.auth->AuthenticateProxied(req, res);
  if (!p || !http::RequireProject(*p, req.matches[1], res)) return std::nullopt;
  auto w = http::OwnersReadyWorkspace(c.auth->store(), *p, req.matches[1], req.matches[2], "its JupyterLab",
                                      c.unreachable_after, res);
  if (!w) return std::nullopt;
  return LabCaller{std::move(*p), std::move(*w)};
}

// The request's target (path and query) as sent, when it is under the workspace's base path
// literally (a prefix written with %-escapes is refused rather than guessed at).
std::optional<std::string> TargetUnderBase(const Request& req, Response& res) {
  const std::string base = LabBasePath(req.matches[1], req.matches[2]);
  if (req.target.rfind(base, 0) != 0) {
    Error(res, 400, fmt::format("write the path's prefix {} without escapes", base));
    return std::nullopt;
  }
  return req.target;
}

json RelayedRequest(const LabCaller& c, const std::string& kind, const std::string& target) {
  return {{"kind", kind},
          {"workspace", c.workspace.id},
          {"project", c.workspace.project},
          {"user", c.principal.subject},
          {"target", target}};
}

void ProxyRequest(const LabContext& c, const Request& req, Response& res) {
  auto caller = Caller(c, req, res);
  if (!caller) return;
  if (std::string(req.matches[3]).empty()) {  // .../lab: JupyterLab's paths are under .../lab/
    res.status = 302;
    res.set_header("Location", LabBasePath(req.matches[1], req.matches[2]));
    return;
  }
  auto target = TargetUnderBase(req, res);
  if (!target) return;
  json headers = json::object();
  for (const char* name : kRequestHeaders)
    if (req.has_header(name)) headers[name] = req.get_header_value(name);
  if (req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos) headers["Accept-Encoding"] = "gzip";
  // cpp-httplib 0.11 compresses text/* answers once more for a client that accepts Brotli,
  // whatever Content-Encoding the answer has already: with the client's Accept-Encoding gone it
  // passes JupyterLab's own (gzip) encoding unchanged.
  const_cast<Request&>(req).headers.erase("Accept-Encoding");
  json relayed = RelayedRequest(*caller, "lab-http", *target);
  relayed["method"] = req.method;
  relayed["headers"] = std::move(headers);
  relayed["body"] = jwt::Base64Encode(req.body);
  auto answer = c.relay->Call(caller->workspace.data_plane, std::move(relayed), kLabRequestTimeout);
  Status st = answer.ok() ? RelayAnswerError(*answer, "JupyterLab did not answer") : answer.status();
  if (!st.ok()) return Error(res, st);
  const json& a = *answer;
  const bool well_formed = a.contains("status") && a["status"].is_number_integer() && a.contains("headers") &&
                           a["headers"].is_object() && a.contains("body") && a["body"].is_string();
  auto body = well_formed ? jwt::Base64Decode(a["body"].get<std::string>()) : Result<std::string>(Status::Error(""));
  const int status = well_formed ? a["status"].get<int>() : 0;
  if (!body.ok() || status < 100 || status > 599) {
    return Error(res, Status::Unavailable("the agent's answer from JupyterLab is malformed"));
  }
  const json& h = a["headers"];
  for (const char* name : kAnswerHeaders)
    if (h.contains(name) && h[name].is_string()) res.set_header(name, h[name].get<std::string>());
  const std::string type = h.contains("Content-Type") && h["Content-Type"].is_string()
                               ? h["Content-Type"].get<std::string>()
                               : "application/octet-stream";
  res.status = status;
  if (status != 204 && status != 304) res.set_content(*body, type);
  if (req.method == "GET" && std::string(req.matches[3]) == "/lab") {
    c.auth->Audit(caller->principal.subject, req, "lab.open", caller->workspace.project + "/" + caller->workspace.id);
  }
}

void ProxySocket(const LabContext& c, const Request& req, Response& res) {
  auto caller = Caller(c, req, res);
  if (!caller || !CheckUpgrade(req, res, c.tls)) return;
  auto target = TargetUnderBase(req, res);
  if (!target) return;
  BrowserTunnel t;
  t.data_plane = caller->workspace.data_plane;
  t.request = RelayedRequest(*caller, "lab-socket", *target);
  t.open_timeout = kLabRequestTimeout;
  t.credential_expires_at = caller->principal.credential_expires_at;
  ServeBrowserTunnel(c.relay, c.tunnels, std::move(t), req, res);
}

}  // namespace

void AddLabRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, TunnelHub* tunnels, int unreachable_after,
                  bool tls) {
  const LabContext c{authn, relay, tunnels, unreachable_after, tls};
  s.Get(kLab, [c](const Request& req, Response& res) {
    if (ws::IsUpgrade({req.headers.begin(), req.headers.end()})) return ProxySocket(c, req, res);
    ProxyRequest(c, req, res);
  });
  auto proxy = [c](const Request& req, Response& res) { ProxyRequest(c, req, res); };
  s.Post(kLab, proxy);
  s.Put(kLab, proxy);
  s.Patch(kLab, proxy);
  s.Delete(kLab, proxy);
}

}  // namespace hpc::cp
