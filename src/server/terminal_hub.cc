#include "server/terminal_hub.h"

#include <fmt/format.h>

#include "common/jwt.h"

namespace hpc::cp {
using nlohmann::json;
using Clock = std::chrono::steady_clock;

Result<std::string> TerminalHub::Open(const TerminalOwner& owner) {
  ASSIGN_OR_RETURN(std::string id, jwt::RandomHex(16));
  std::lock_guard<std::mutex> lock(mu_);
  if (shutdown_) return Status::Unavailable("the control plane is stopping");
  size_t open = 0, mine = 0;
  for (const auto& [sid, s] : sessions_) {
    if (s->closed) continue;
    ++open;
    mine += s->owner.user == owner.user;
  }
  if (mine >= kMaxPerUser) {
    return Status::Unavailable(
        fmt::format("{} has {} terminals open already; close one first", owner.user, kMaxPerUser));
  }
  if (open >= kMaxSessions) return Status::Unavailable("too many terminals are open; try again later");
  auto s = std::make_shared<Session>();
  s->owner = owner;
  s->last_read = Clock::now();
  sessions_[id] = s;
  return id;
}

std::shared_ptr<TerminalHub::Session> TerminalHub::FindOwned(const std::string& id, const std::string& user) {
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->owner.user != user) return nullptr;
  return it->second;
}

Result<TerminalOwner> TerminalHub::OwnerOf(const std::string& id, const std::string& user) {
  std::lock_guard<std::mutex> lock(mu_);
  auto s = FindOwned(id, user);
  if (!s) return Status::NotFound("no such terminal");
  return s->owner;
}

void TerminalHub::CloseLocked(Session& s, const std::string& reason) {
  if (s.closed) return;
  s.closed = true;
  s.reason = reason;
  s.closed_at = Clock::now();
  changed_.notify_all();
}

Status TerminalHub::Input(const std::string& id, const std::string& user, json event) {
  std::lock_guard<std::mutex> lock(mu_);
  auto s = FindOwned(id, user);
  if (!s) return Status::NotFound("no such terminal");
  if (s->closed) return Status::FailedPrecondition("the terminal is closed: " + s->reason);
  const size_t bytes = event.contains("data") ? event["data"].get_ref<const std::string&>().size() : 0;
  if (s->input_bytes + bytes > kMaxPendingInputBytes) {
    return Status::Unavailable("the terminal's input is not being taken; wait for the shell to catch up");
  }
  s->input_bytes += bytes;
  s->input.push_back(std::move(event));
  changed_.notify_all();
  return Status::Ok();
}

Result<TerminalOutput> TerminalHub::Output(const std::string& id, const std::string& user, uint64_t offset,
                                           std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto s = FindOwned(id, user);
  if (!s) return Status::NotFound("no such terminal");
  s->last_read = Clock::now();
  changed_.wait_for(lock, wait, [&] { return shutdown_ || s->closed || s->output_base + s->output.size() > offset; });
  s->last_read = Clock::now();
  TerminalOutput out;
  out.offset = std::max(offset, s->output_base);
  const uint64_t end = s->output_base + s->output.size();
  if (out.offset < end) out.data = s->output.substr(out.offset - s->output_base);
  out.next = std::max(out.offset, end);
  out.closed = s->closed || shutdown_;
  out.reason = shutdown_ && !s->closed ? "the control plane is stopping" : s->reason;
  return out;
}

Status TerminalHub::Close(const std::string& id, const std::string& user, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto s = FindOwned(id, user);
  if (!s) return Status::NotFound("no such terminal");
  CloseLocked(*s, reason);
  return Status::Ok();
}

Result<TerminalInput> TerminalHub::TakeInput(const std::string& id, const std::string& data_plane,
                                             std::chrono::milliseconds wait) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->owner.data_plane != data_plane) {
    return Status::NotFound("no such terminal on data plane " + data_plane);
  }
  auto s = it->second;
  changed_.wait_for(lock, wait, [&] { return shutdown_ || s->closed || !s->input.empty(); });
  TerminalInput in;
  in.events.swap(s->input);
  s->input_bytes = 0;
  in.closed = s->closed || shutdown_;
  return in;
}

Status TerminalHub::PutOutput(const std::string& id, const std::string& data_plane, const std::string& bytes,
                              const std::optional<std::string>& exit_reason) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->owner.data_plane != data_plane) {
    return Status::NotFound("no such terminal on data plane " + data_plane);
  }
  Session& s = *it->second;
  s.output += bytes;
  if (s.output.size() > kMaxOutputBytes) {
    const size_t drop = s.output.size() - kMaxOutputBytes;
    s.output.erase(0, drop);
    s.output_base += drop;
  }
  if (exit_reason) CloseLocked(s, *exit_reason);
  changed_.notify_all();
  return Status::Ok();
}

void TerminalHub::Reap() {
  std::lock_guard<std::mutex> lock(mu_);
  const auto now = Clock::now();
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    Session& s = *it->second;
    if (!s.closed && now - s.last_read > idle_) {
      CloseLocked(s, fmt::format("nobody read it for {} s", idle_.count()));
    }
    it = s.closed && now - s.closed_at > std::chrono::minutes(1) ? sessions_.erase(it) : std::next(it);
  }
}

void TerminalHub::Shutdown() {
  std::lock_guard<std::mutex> lock(mu_);
  shutdown_ = true;
  changed_.notify_all();
}

size_t TerminalHub::OpenSessions() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t n = 0;
  for (const auto& [id, s] : sessions_) n += !s->closed;
  return n;
}

}  // namespace hpc::cp
