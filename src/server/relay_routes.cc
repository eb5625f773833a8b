#include "server/relay_routes.h"

#include <httplib.h>

#include <nlohmann/json.hpp>

#include "server/http_api.h"
#include "server/relay_hub.h"
#include "server/route_table.h"

namespace hpc::cp {
using http::Error;
using http::Ok;
using httplib::Request;
using httplib::Response;
using nlohmann::json;

namespace {

constexpr const char* kRelay = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/relay)";
constexpr const char* kAnswer = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/relay/([0-9a-f]{32}))";
// The longest an agent's poll is held open: under every proxy's idle timeout we know of.
constexpr int64_t kMaxRelayWaitSeconds = 25;

void TakeRequests(http::Auth* authn, RelayHub* relay, const Request& req, Response& res) {
  auto p = authn->Authenticate(req, res);
  if (!p || !http::RequireAgentFor(*p, req.matches[1], res)) return;
  int64_t wait = 20;
  if (!http::IntegerParam(req, res, "wait", 0, kMaxRelayWaitSeconds, &wait)) return;
  json requests = json::array();
  for (auto& r : relay->Take(req.matches[1], std::chrono::seconds(wait))) requests.push_back(std::move(r));
  Ok(res, {{"requests", requests}});
}

void AnswerRequest(http::Auth* authn, RelayHub* relay, const Request& req, Response& res) {
  auto body = authn->AgentBody(req, res);
  if (!body) return;
  if (!body->is_object())
    return Error(res, Status::InvalidArgument("", "an answer is a JSON object").WithField("body"));
  if (Status s = relay->Answer(req.matches[1], req.matches[2], std::move(*body)); !s.ok()) return Error(res, s);
  Ok(res, {{"accepted", true}});
}

}  // namespace

void AddRelayRoutes(RouteTable& s, http::Auth* authn, RelayHub* relay) {
  s.Get(kRelay, [authn, relay](const Request& req, Response& res) { TakeRequests(authn, relay, req, res); });
  s.Post(kAnswer, [authn, relay](const Request& req, Response& res) { AnswerRequest(authn, relay, req, res); });
}

}  // namespace hpc::cp
