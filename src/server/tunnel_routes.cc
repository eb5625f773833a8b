#include "server/tunnel_routes.h"

#include <fmt/format.h>

#include "server/http_api.h"
#include "server/relay_hub.h"
#include "server/route_table.h"
#include "server/tunnel_hub.h"
#include "server/websocket_upgrade.h"

namespace hpc::cp {
using http::Error;
using httplib::Request;
using httplib::Response;

namespace {
constexpr const char* kAgentTunnel = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/tunnels/([0-9a-f]{32}))";
// After the agent answered that its end is open, its connection is a moment away at most.
constexpr auto kAgentEndTimeout = std::chrono::seconds(5);

void AgentEnd(http::Auth* auth, TunnelHub* tunnels, const Request& req, Response& res) {
  auto p = auth->Authenticate(req, res);
  if (!p || !http::RequireAgentFor(*p, req.matches[1], res) || !CheckUpgrade(req, res)) return;
  const std::string data_plane = req.matches[1], tunnel = req.matches[2];
  if (!tunnels->Waits(tunnel, TunnelHub::End::kAgent, data_plane)) {
    return Error(
        res, Status::NotFound(fmt::format("no tunnel {} waits for data plane {}", tunnel.substr(0, 8), data_plane)));
  }
  bool served = ServeWebSocket(
      req, res,
      [tunnels, tunnel](std::string data, bool binary) {
        tunnels->Forward(tunnel, TunnelHub::End::kAgent, std::move(data), binary);
      },
      [tunnels, tunnel](const ws::CloseInfo& info) { tunnels->Closed(tunnel, info); },
      [&](const std::shared_ptr<ws::Connection>& conn) {
        if (!tunnels->Join(tunnel, TunnelHub::End::kAgent, data_plane, conn).ok()) {
          conn->Close(ws::kServerError, "the tunnel ended before its agent's end joined");
        }
      });
  if (!served) tunnels->Closed(tunnel, {ws::kServerError, "the agent's socket could not be served"});
}
}  // namespace

void ServeBrowserTunnel(RelayHub* relay, TunnelHub* tunnels, BrowserTunnel t, const Request& req, Response& res) {
  auto id = tunnels->Create(t.data_plane);
  if (!id.ok()) return Error(res, id.status());
  auto answer = relay->Call(t.data_plane, WithTunnel(std::move(t.request), *id), t.open_timeout);
  Status st = answer.ok() ? RelayAnswerError(*answer, "the agent could not open its end") : answer.status();
  if (st.ok() && !tunnels->WaitForAgent(*id, kAgentEndTimeout)) {
    st = Status::Unavailable("the agent's end of the socket did not arrive");
  }
  if (!st.ok()) {
    tunnels->Closed(*id, {ws::kServerError, st.message()});
    return Error(res, st);
  }
  const std::string tunnel = *id;
  auto on_close = t.on_close;
  bool served = ServeWebSocket(
      req, res,
      [tunnels, tunnel](std::string data, bool binary) {
        tunnels->Forward(tunnel, TunnelHub::End::kBrowser, std::move(data), binary);
      },
      [tunnels, tunnel, on_close](const ws::CloseInfo& info) {
        tunnels->Closed(tunnel, info);
        if (on_close) on_close(info);
      },
      [&](const std::shared_ptr<ws::Connection>& conn) {
        if (!tunnels->Join(tunnel, TunnelHub::End::kBrowser, "", conn).ok()) {
          conn->Close(ws::kServerError, "the socket ended before it opened");
          return;
        }
        if (t.credential_expires_at > 0) {
          conn->CloseAt(std::chrono::system_clock::from_time_t(t.credential_expires_at), ws::kTokenExpired,
                        "the sign-in expired");
        }
        if (t.on_open) t.on_open();
      });
  if (!served) tunnels->Closed(tunnel, {ws::kServerError, "the browser's socket could not be served"});
}

void AddTunnelRoutes(RouteTable& s, http::Auth* authn, TunnelHub* tunnels) {
  s.Get(kAgentTunnel, [authn, tunnels](const Request& req, Response& res) { AgentEnd(authn, tunnels, req, res); });
}

}  // namespace hpc::cp
