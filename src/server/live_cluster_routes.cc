#include "server/live_cluster_routes.h"

#include <httplib.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/jwt.h"
#include "messages/live_cluster.h"
#include "server/http_api.h"
#include "server/route_table.h"

namespace hpc::cp {
using http::Error;
using http::Ok;
using httplib::Request;
using httplib::Response;
using nlohmann::json;

namespace {

constexpr const char* kLive = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/live)";
constexpr const char* kHistory = R"(/api/v1/dataplanes/([a-z][a-z0-9-]*)/nodesets/history)";
// Points a history answer holds at most per nodeset.
constexpr int64_t kMaxHistoryPoints = 500;

// An agent's live view of its own data plane: checked field by field, stored whole (as the
// server re-encodes it, so nothing unchecked is kept), and its nodesets sampled.
void PutLive(http::Auth* authn, const Request& req, Response& res) {
  auto body = authn->AgentBody(req, res);
  if (!body) return;
  auto view = LiveClusterFromJson(*body);
  if (!view.ok()) return Error(res, view.status());
  const int64_t now = jwt::UnixNow();
  std::vector<NodeSetSample> samples;
  for (const auto& s : view->nodesets) {
    samples.push_back(
        {s.name, now / kNodeSetSampleSeconds * kNodeSetSampleSeconds, s.desired, s.current, s.busy, s.idle});
  }
  if (Status st = authn->store()->PutLiveCluster(req.matches[1], ToJson(*view).dump(), now, samples); !st.ok()) {
    return Error(res, StoreUnavailable(st));
  }
  Ok(res, {{"accepted", true}});
}

void GetLive(LiveClusterStore* store, int stale_after, const Request& req, Response& res) {
  const std::string data_plane = req.matches[1];
  auto live = store->GetLiveCluster(data_plane);
  if (!live.ok()) return Error(res, StoreUnavailable(live.status()));
  if (!*live) {
    return Error(res, Status::NotFound(fmt::format("data plane {} has not reported its cluster", data_plane)));
  }
  const auto& [view, received_at] = **live;
  const int64_t age = std::max<int64_t>(0, jwt::UnixNow() - received_at);
  // The view is stored as the server encoded it (PutLive): it goes out as it is, not parsed
  // and encoded again (megabytes with a long queue).
  json out = {
      {"dataPlane", data_plane}, {"receivedAt", received_at}, {"ageSeconds", age}, {"stale", age > stale_after}};
  std::string body = out.dump();
  body.pop_back();  // the closing brace
  res.status = 200;
  res.set_content(body + ",\"view\":" + view + "}\n", http::kJsonContentType);
}

// Each nodeset's desired, current, busy and idle workers over [from, to) (default: the last
// hour), in steps that keep each series at most kMaxHistoryPoints long.
void GetHistory(LiveClusterStore* store, const Request& req, Response& res) {
  const int64_t now = jwt::UnixNow();
  int64_t from = now - 3600, to = now + 1;
  Status range = http::IntegerQuery(req, "from", 0, http::kMaxUnixSeconds, &from);
  if (range.ok()) range = http::IntegerQuery(req, "to", 1, http::kMaxUnixSeconds, &to);
  if (!range.ok()) return Error(res, range);
  if (from >= to) return Error(res, Status::InvalidArgument("", "from must be before to").WithField("from"));
  if (to - from > kNodeSetHistorySeconds) {
    return Error(res, Status::InvalidArgument(
                          "", fmt::format("at most {} days between from and to", kNodeSetHistorySeconds / 86400))
                          .WithField("from"));
  }
  int64_t step = std::max(kNodeSetSampleSeconds, (to - from + kMaxHistoryPoints - 1) / kMaxHistoryPoints);
  step = (step + kNodeSetSampleSeconds - 1) / kNodeSetSampleSeconds * kNodeSetSampleSeconds;
  auto samples = store->NodeSetHistory(req.matches[1], from, to, step);
  if (!samples.ok()) return Error(res, StoreUnavailable(samples.status()));
  json series = json::object();
  for (const auto& s : *samples) {
    series[s.nodeset].push_back(
        {{"at", s.at}, {"desired", s.desired}, {"current", s.current}, {"busy", s.busy}, {"idle", s.idle}});
  }
  Ok(res, {{"from", from}, {"to", to}, {"step", step}, {"nodesets", series}});
}

}  // namespace

void AddLiveClusterRoutes(RouteTable& s, http::Auth* authn, int stale_after) {
  Store* store = authn->store();
  s.Post(kLive, [authn](const Request& req, Response& res) { PutLive(authn, req, res); });
  s.Get(kLive, http::AdminOnly(authn, [store, stale_after](const Principal&, const Request& req, Response& res) {
          GetLive(store, stale_after, req, res);
        }));
  s.Get(kHistory, http::AdminOnly(authn, [store](const Principal&, const Request& req, Response& res) {
          GetHistory(store, req, res);
        }));
}

}  // namespace hpc::cp
