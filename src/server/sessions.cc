#include "server/sessions.h"

#include <algorithm>

#include "common/jwt.h"

namespace hpc::cp {

Result<Session> SessionTable::Create(const std::string& token_digest, int64_t now) {
  ASSIGN_OR_RETURN(std::string id_bytes, jwt::RandomBytes(32));
  ASSIGN_OR_RETURN(std::string csrf_bytes, jwt::RandomBytes(32));
  Session s{jwt::Sha256Hex(id_bytes), token_digest, jwt::Sha256Hex(csrf_bytes), now + ttl_};
  std::lock_guard<std::mutex> l(mu_);
  // Bounded memory: expired sessions go first; past the limit the oldest-expiring one.
  if (sessions_.size() >= max_) {
    std::erase_if(sessions_, [&](const auto& kv) { return kv.second.expires_at <= now; });
    while (sessions_.size() >= max_) {
      auto oldest = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
        return a.second.expires_at < b.second.expires_at;
      });
      sessions_.erase(oldest);
    }
  }
  sessions_[s.id] = s;
  return s;
}

std::optional<Session> SessionTable::Find(const std::string& id, int64_t now) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  if (it->second.expires_at <= now) {
    sessions_.erase(it);
    return std::nullopt;
  }
  return it->second;
}

void SessionTable::Delete(const std::string& id) {
  std::lock_guard<std::mutex> l(mu_);
  sessions_.erase(id);
}

std::string CookieValue(const std::string& header, const std::string& name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string part = header.substr(pos, end - pos);
    part.erase(0, part.find_first_not_of(' '));
    if (part.size() > name.size() && part.compare(0, name.size(), name) == 0 && part[name.size()] == '=') {
      return part.substr(name.size() + 1);
    }
    pos = end + 1;
  }
  return "";
}

}  // namespace hpc::cp
