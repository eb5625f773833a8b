#include "server/lab_routes.h"

#include <httplib.h>

#include <array>
#include <chrono>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "server/http_api.h"
#include "server/relay_hub.h"
#include "server/route_table.h"
#include "server/tunnel_hub.h"
#include "server/tunnel_routes.h"
#include "server/websocket_upgrade.h"

namespace hpc::cp {
using http::Error;
using httplib::Request;
using httplib::Response;

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
  LabHttp relayed{.workspace = caller->workspace.id,
                  .project = caller->workspace.project,
                  .user = caller->principal.subject,
                  .target = *target,
                  .method = req.method,
                  .headers = {},
                  .body = req.body};
  for (const char* name : kRequestHeaders)
    if (req.has_header(name)) relayed.headers[name] = req.get_header_value(name);
  if (req.get_header_value("Accept-Encoding").find("gzip") != std::string::npos)
    relayed.headers["Accept-Encoding"] = "gzip";
  // cpp-httplib 0.11 compresses text/* answers once more for a client that accepts Brotli,
  // whatever Content-Encoding the answer has already: with the client's Accept-Encoding gone it
  // passes JupyterLab's own (gzip) encoding unchanged.
  const_cast<Request&>(req).headers.erase("Accept-Encoding");
  auto answer = c.relay->Call(caller->workspace.data_plane, ToJson(relayed), kLabRequestTimeout);
  Status st = answer.ok() ? RelayAnswerError(*answer, "JupyterLab did not answer") : answer.status();
  if (!st.ok()) return Error(res, st);
  auto lab = LabHttpAnswerFromJson(*answer);
  if (!lab.ok()) return Error(res, lab.status());
  for (const char* name : kAnswerHeaders)
    if (auto it = lab->headers.find(name); it != lab->headers.end()) res.set_header(name, it->second);
  auto type = lab->headers.find("Content-Type");
  res.status = lab->status;
  if (lab->status != 204 && lab->status != 304) {
    res.set_content(lab->body, type != lab->headers.end() ? type->second : "application/octet-stream");
  }
  if (req.method == "GET" && std::string(req.matches[3]) == "/lab") {
    c.auth->Audit(caller->principal.subject, req, "lab.open", caller->workspace.project + "/" + caller->workspace.id);
  }
}

void ProxySocket(const LabContext& c, const Request& req, Response& res) {
  auto caller = Caller(c, req, res);
  if (!caller || !CheckUpgrade(req, res)) return;
  auto target = TargetUnderBase(req, res);
  if (!target) return;
  BrowserTunnel t;
  t.data_plane = caller->workspace.data_plane;
  t.request = ToJson(LabSocket{.tunnel = "",
                               .workspace = caller->workspace.id,
                               .project = caller->workspace.project,
                               .user = caller->principal.subject,
                               .target = *target});
  t.open_timeout = kLabRequestTimeout;
  t.credential_expires_at = caller->principal.credential_expires_at;
  ServeBrowserTunnel(c.relay, c.tunnels, std::move(t), req, res);
}

}  // namespace

void AddLabRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, TunnelHub* tunnels, int unreachable_after) {
  const LabContext c{authn, relay, tunnels, unreachable_after};
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
