#include "server/tunnel_hub.h"

#include <fmt/format.h>

#include "common/jwt.h"

namespace hpc::cp {

namespace {
size_t Index(TunnelHub::End e) { return e == TunnelHub::End::kBrowser ? 0 : 1; }
}  // namespace

Result<std::string> TunnelHub::Create(const std::string& data_plane) {
  ASSIGN_OR_RETURN(std::string id, jwt::RandomHex(16));
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return Status::Unavailable("the control plane is stopping");
  if (tunnels_.size() >= max_tunnels_) {
    return Status::Unavailable(
        fmt::format("{} sockets are open through this server already; try again later", max_tunnels_));
  }
  auto t = std::make_shared<Tunnel>();
  t->data_plane = data_plane;
  tunnels_[id] = t;
  return id;
}

bool TunnelHub::Waits(const std::string& id, End end, const std::string& data_plane) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = tunnels_.find(id);
  return it != tunnels_.end() && !it->second->joined[Index(end)] &&
         (end == End::kBrowser || it->second->data_plane == data_plane);
}

Status TunnelHub::Join(const std::string& id, End end, const std::string& data_plane,
                       std::shared_ptr<ws::Connection> c) {
  std::vector<std::pair<std::string, bool>> waiting;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tunnels_.find(id);
    const size_t i = Index(end);
    if (it == tunnels_.end() || it->second->joined[i] || (end == End::kAgent && it->second->data_plane != data_plane)) {
      return Status::NotFound(fmt::format("no tunnel {} waits for this end", id.substr(0, 8)));
    }
    Tunnel& t = *it->second;
    t.joined[i] = true;
    t.ends[i] = c;
    waiting.swap(t.waiting[i]);
    t.waiting_bytes = 0;
    joined_.notify_all();
  }
  for (auto& [data, binary] : waiting) c->Send(std::move(data), binary);
  return Status::Ok();
}

bool TunnelHub::WaitForAgent(const std::string& id, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return joined_.wait_for(lock, timeout, [&] {
    auto it = tunnels_.find(id);
    return it == tunnels_.end() || it->second->joined[Index(End::kAgent)];
  }) && tunnels_.count(id) > 0;
}

void TunnelHub::Forward(const std::string& id, End from, std::string data, bool binary) {
  std::shared_ptr<ws::Connection> to;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tunnels_.find(id);
    if (it == tunnels_.end()) return;
    Tunnel& t = *it->second;
    const size_t other = 1 - Index(from);
    if (!t.joined[other]) {
      t.waiting_bytes += data.size();
      if (t.waiting_bytes <= max_waiting_bytes_) {
        t.waiting[other].emplace_back(std::move(data), binary);
        return;
      }
    } else {
      to = t.ends[other];
    }
  }
  if (to) return to->Send(std::move(data), binary);
  Closed(id, {ws::kTooBig, "too much sent before the other end joined"});
}

void TunnelHub::Closed(const std::string& id, const ws::CloseInfo& info) {
  std::shared_ptr<Tunnel> t;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = tunnels_.find(id);
    if (it == tunnels_.end()) return;
    t = it->second;
    tunnels_.erase(it);
    joined_.notify_all();
  }
  const std::string reason = info.reason.empty() && info.code == 1006 ? "the other end went away" : info.reason;
  // The end that closed is closed already (Close does nothing then); one refused, such as a
  // sender past the bound, hears why.
  for (auto& c : t->ends)
    if (c) c->Close(ws::SendableCloseCode(info.code), reason);
}

void TunnelHub::Shutdown() {
  std::map<std::string, std::shared_ptr<Tunnel>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    all.swap(tunnels_);
    joined_.notify_all();
  }
  for (auto& [id, t] : all)
    for (auto& c : t->ends)
      if (c) c->Close(ws::kGoingAway, "the control plane is stopping");
}

size_t TunnelHub::Open() {
  std::lock_guard<std::mutex> lock(mu_);
  return tunnels_.size();
}

}  // namespace hpc::cp
