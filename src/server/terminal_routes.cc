#include "server/terminal_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "server/http_api.h"
#include "server/relay_hub.h"
#include "server/route_table.h"
#include "server/terminal_hub.h"
#include "server/tunnel_routes.h"
#include "server/websocket_upgrade.h"

namespace hpc::cp {
using http::Error;
using http::Ok;
using httplib::Request;
using httplib::Response;
using nlohmann::json;

namespace {

constexpr const char* kOpen = R"(/api/v1/projects/([a-z][a-z0-9-]*)/workspaces/([a-z][a-z0-9-]*)/terminals)";
constexpr const char* kSocket = R"(/api/v1/projects/([a-z][a-z0-9-]*)/workspaces/([a-z][a-z0-9-]*)/terminal)";
constexpr const char* kTerminal = R"(/api/v1/terminals/([0-9a-f]{32}))";
constexpr const char* kAgentTerminal = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/terminals/([0-9a-f]{32}))";
constexpr int64_t kMaxTerminalWaitSeconds = 25;

// A terminal's size: 2..1000 columns and rows, as a pseudo-terminal takes it.
Status SizeFrom(const json& j, int64_t* cols, int64_t* rows) {
  for (auto [key, out] : {std::pair<const char*, int64_t*>{"cols", cols}, {"rows", rows}}) {
    if (!j.contains(key)) continue;
    if (!j[key].is_number_integer() || j[key].get<int64_t>() < 2 || j[key].get<int64_t>() > 1000) {
      return Status::InvalidArgument("", fmt::format("{} must be an integer 2..1000", key)).WithField(key);
    }
    *out = j[key].get<int64_t>();
  }
  return Status::Ok();
}

void OpenTerminal(http::Auth* auth, RelayHub* relay, TerminalHub* terminals, int unreachable_after, const Principal& p,
                  const std::string& project, const Request& req, Response& res) {
  auto body = http::Body(req, res);
  if (!body) return;
  int64_t cols = 80, rows = 24;
  if (Status s = body->is_object() ? SizeFrom(*body, &cols, &rows)
                                   : Status::InvalidArgument("", "the body is a JSON object").WithField("body");
      !s.ok()) {
    return Error(res, s);
  }
  const std::string id = req.matches[2];
  auto w = http::OwnersReadyWorkspace(auth->store(), p, project, id, "a terminal in it", unreachable_after, res);
  if (!w) return;
  terminals->Reap();
  auto session = terminals->Open({p.subject, project, id, w->data_plane});
  if (!session.ok()) return Error(res, session.status());
  auto started = relay->Call(w->data_plane,
                             ToJson(TerminalOpen{.session = *session,
                                                 .workspace = id,
                                                 .user = p.subject,
                                                 .cols = static_cast<int>(cols),
                                                 .rows = static_cast<int>(rows)}),
                             std::chrono::seconds(20));
  Status st = started.ok() ? RelayAnswerError(*started, "the agent could not start the shell") : started.status();
  if (!st.ok()) {
    (void)terminals->Close(*session, p.subject, "it did not start");
    return Error(res, st);
  }
  auth->Audit(p.subject, req, "terminal.open", project + "/" + id, "session " + session->substr(0, 8));
  Ok(res, {{"id", *session}, {"workspace", id}}, 201);
}

// A terminal over a WebSocket: the browser's socket joined to one the agent opens for the shell.
void OpenSocket(http::Auth* auth, RelayHub* relay, TunnelHub* tunnels, int unreachable_after, const Principal& p,
                const std::string& project, const Request& req, Response& res) {
  if (!CheckUpgrade(req, res)) return;
  int64_t cols = 80, rows = 24;
  if (!http::IntegerParam(req, res, "cols", 2, 1000, &cols) || !http::IntegerParam(req, res, "rows", 2, 1000, &rows)) {
    return;
  }
  const std::string id = req.matches[2];
  auto w = http::OwnersReadyWorkspace(auth->store(), p, project, id, "a terminal in it", unreachable_after, res);
  if (!w) return;
  BrowserTunnel t;
  t.data_plane = w->data_plane;
  t.request = ToJson(TerminalSocket{.tunnel = "",
                                    .workspace = id,
                                    .user = p.subject,
                                    .cols = static_cast<int>(cols),
                                    .rows = static_cast<int>(rows)});
  t.credential_expires_at = p.credential_expires_at;
  const std::string target = project + "/" + id, actor = p.subject;
  t.on_open = [auth, &req, actor, target] { auth->Audit(actor, req, "terminal.open", target, "websocket"); };
  t.on_close = [auth, &req, actor, target](const ws::CloseInfo& info) {
    auth->Audit(actor, req, "terminal.close", target, fmt::format("{} {}", info.code, info.reason.substr(0, 100)));
  };
  ServeBrowserTunnel(relay, tunnels, std::move(t), req, res);
}

void ReadOutput(TerminalHub* terminals, const Principal& p, const Request& req, Response& res) {
  int64_t offset = 0, wait = 20;
  if (!http::IntegerParam(req, res, "offset", 0, INT64_MAX / 2, &offset)) return;
  if (!http::IntegerParam(req, res, "wait", 0, kMaxTerminalWaitSeconds, &wait)) return;
  auto out = terminals->Output(req.matches[1], p.subject, static_cast<uint64_t>(offset), std::chrono::seconds(wait));
  if (!out.ok()) return Error(res, out.status());
  Ok(res, {{"data", jwt::Base64Encode(out->data)},
           {"offset", out->offset},
           {"next", out->next},
           {"closed", out->closed},
           {"reason", out->reason}});
}

void Type(TerminalHub* terminals, const Principal& p, const Request& req, Response& res) {
  auto body = http::Body(req, res);
  if (!body) return;
  json event;
  if (body->is_object() && body->contains("data") && (*body)["data"].is_string()) {
    if ((*body)["data"].get_ref<const std::string&>().size() > TerminalHub::kMaxPendingInputBytes) {
      return Error(res, Status::InvalidArgument(
                            "", fmt::format("data: at most {} bytes at once", TerminalHub::kMaxPendingInputBytes))
                            .WithField("data"));
    }
    event = {{"data", (*body)["data"]}};
  } else if (body->is_object() && body->contains("resize") && (*body)["resize"].is_object()) {
    int64_t cols = 0, rows = 0;
    if (Status s = SizeFrom((*body)["resize"], &cols, &rows); !s.ok()) return Error(res, s);
    if (cols == 0 || rows == 0) {
      return Error(res, Status::InvalidArgument("", "resize needs cols and rows").WithField("resize"));
    }
    event = {{"resize", {{"cols", cols}, {"rows", rows}}}};
  } else {
    return Error(
        res,
        Status::InvalidArgument("", "send {\"data\": text} or {\"resize\": {\"cols\", \"rows\"}}").WithField("body"));
  }
  if (Status s = terminals->Input(req.matches[1], p.subject, std::move(event)); !s.ok()) return Error(res, s);
  Ok(res, {{"accepted", true}});
}

void CloseTerminal(http::Auth* auth, TerminalHub* terminals, const Principal& p, const Request& req, Response& res) {
  auto owner = terminals->OwnerOf(req.matches[1], p.subject);
  if (!owner.ok()) return Error(res, owner.status());
  if (Status s = terminals->Close(req.matches[1], p.subject, "closed by its user"); !s.ok()) return Error(res, s);
  auth->Audit(p.subject, req, "terminal.close", owner->project + "/" + owner->workspace,
              "session " + std::string(req.matches[1]).substr(0, 8));
  Ok(res, {{"closed", true}});
}

void AgentInput(http::Auth* auth, TerminalHub* terminals, const Request& req, Response& res) {
  auto p = auth->Authenticate(req, res);
  if (!p || !http::RequireAgentFor(*p, req.matches[1], res)) return;
  int64_t wait = 20;
  if (!http::IntegerParam(req, res, "wait", 0, kMaxTerminalWaitSeconds, &wait)) return;
  terminals->Reap();
  auto in = terminals->TakeInput(req.matches[2], req.matches[1], std::chrono::seconds(wait));
  if (!in.ok()) return Error(res, in.status());
  Ok(res, {{"events", in->events}, {"closed", in->closed}});
}

void AgentOutput(http::Auth* auth, TerminalHub* terminals, const Request& req, Response& res) {
  auto body = auth->AgentBody(req, res);
  if (!body) return;
  if (!body->is_object() || !body->contains("data") || !(*body)["data"].is_string()) {
    return Error(res, Status::InvalidArgument("", "data must be base64 text").WithField("data"));
  }
  auto bytes = jwt::Base64Decode((*body)["data"].get<std::string>());
  if (!bytes.ok()) return Error(res, Status::InvalidArgument("", "data must be base64 text").WithField("data"));
  std::optional<std::string> exit_reason;
  if (body->contains("exited")) {
    if (!(*body)["exited"].is_string()) {
      return Error(res, Status::InvalidArgument("", "exited must be a string").WithField("exited"));
    }
    exit_reason = (*body)["exited"].get<std::string>().substr(0, 200);
  }
  if (Status s = terminals->PutOutput(req.matches[2], req.matches[1], *bytes, exit_reason); !s.ok()) {
    return Error(res, s);
  }
  Ok(res, {{"accepted", true}});
}

}  // namespace

void AddTerminalRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay, TerminalHub* terminals, TunnelHub* tunnels,
                       int unreachable_after) {
  s.Get(kSocket,
        http::InProject(authn, [=](const Principal& p, const std::string& project, const Request& req, Response& res) {
          OpenSocket(authn, relay, tunnels, unreachable_after, p, project, req, res);
        }));
  s.Post(kOpen,
         http::InProject(authn, [=](const Principal& p, const std::string& project, const Request& req, Response& res) {
           OpenTerminal(authn, relay, terminals, unreachable_after, p, project, req, res);
         }));
  s.Get(std::string(kTerminal) + "/output",
        http::Authenticated(authn, [terminals](const Principal& p, const Request& req, Response& res) {
          ReadOutput(terminals, p, req, res);
        }));
  s.Post(std::string(kTerminal) + "/input",
         http::Authenticated(authn, [terminals](const Principal& p, const Request& req, Response& res) {
           Type(terminals, p, req, res);
         }));
  s.Delete(kTerminal,
           http::Authenticated(authn, [authn, terminals](const Principal& p, const Request& req, Response& res) {
             CloseTerminal(authn, terminals, p, req, res);
           }));
  s.Get(std::string(kAgentTerminal) + "/input",
        [authn, terminals](const Request& req, Response& res) { AgentInput(authn, terminals, req, res); });
  s.Post(std::string(kAgentTerminal) + "/output",
         [authn, terminals](const Request& req, Response& res) { AgentOutput(authn, terminals, req, res); });
}

}  // namespace hpc::cp
