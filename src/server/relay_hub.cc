#include "server/relay_hub.h"

#include <fmt/format.h>

#include "common/jwt.h"

namespace hpc::cp {
using nlohmann::json;

size_t RelayHub::PendingFor(const std::string& data_plane) const {
  size_t n = 0;
  for (const auto& [id, p] : pending_) n += p->data_plane == data_plane;
  return n;
}

Result<json> RelayHub::Call(const std::string& data_plane, json request, std::chrono::milliseconds timeout) {
  // Ids are not guessable: only the agent that took a request learns its id, so no other caller
  // can answer in its place even if an agent token leaked to a neighbour.
  ASSIGN_OR_RETURN(std::string id, jwt::RandomHex(16));
  std::unique_lock<std::mutex> lock(mu_);
  if (shutdown_) return Status::Unavailable("the control plane is stopping");
  if (PendingFor(data_plane) >= max_pending_) {
    return Status::Unavailable(fmt::format(
        "data plane {} has {} requests waiting for its agent already; try again shortly", data_plane, max_pending_));
  }
  auto pending = std::make_shared<Pending>();
  pending->data_plane = data_plane;
  pending->request = std::move(request);
  pending_[id] = pending;
  changed_.notify_all();
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  changed_.wait_until(lock, deadline, [&] { return pending->answer.has_value() || shutdown_; });
  pending_.erase(id);
  if (pending->answer) return std::move(*pending->answer);
  if (shutdown_) return Status::Unavailable("the control plane is stopping");
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(timeout).count();
  if (!pending->taken) {
    return Status::Unavailable(fmt::format(
        "data plane {}'s agent did not pick the request up within {} s: is its agent running and connected?",
        data_plane, seconds));
  }
  return Status::Unavailable(fmt::format("data plane {}'s agent did not answer within {} s", data_plane, seconds));
}

std::vector<json> RelayHub::Take(const std::string& data_plane, std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto untaken = [&] {
    for (const auto& [id, p] : pending_) {
      if (p->data_plane == data_plane && !p->taken) return true;
    }
    return false;
  };
  changed_.wait_for(lock, wait, [&] { return shutdown_ || untaken(); });
  std::vector<json> out;
  if (shutdown_) return out;
  for (auto& [id, p] : pending_) {
    if (p->data_plane != data_plane || p->taken) continue;
    p->taken = true;
    json r = p->request;
    r["id"] = id;
    out.push_back(std::move(r));
  }
  return out;
}

Status RelayHub::Answer(const std::string& data_plane, const std::string& id, json answer) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pending_.find(id);
  if (it == pending_.end() || it->second->data_plane != data_plane || !it->second->taken || it->second->answer) {
    return Status::NotFound(fmt::format("no request {} waits for an answer from data plane {}", id, data_plane));
  }
  it->second->answer = std::move(answer);
  changed_.notify_all();
  return Status::Ok();
}

void RelayHub::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  changed_.notify_all();
}

}  // namespace hpc::cp
