// Setting status conditions the Kubernetes way: lastTransitionTime moves only when the
// condition's status changes, so a steady state writes nothing new.
#pragma once

#include <ctime>
#include <string>
#include <vector>

#include "api/types.h"

namespace hpc::op {

inline std::string Rfc3339Now() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline void SetCondition(std::vector<api::Condition>* conds, const std::string& type, bool value,
                         const std::string& reason, const std::string& message) {
  const std::string status = value ? "True" : "False";
  for (auto& c : *conds) {
    if (c.type != type) continue;
    if (c.status != status) c.last_transition_time = Rfc3339Now();
    c.status = status;
    c.reason = reason;
    c.message = message;
    return;
  }
  conds->push_back({type, status, reason, message, Rfc3339Now()});
}

inline const api::Condition* FindCondition(const std::vector<api::Condition>& conds, const std::string& type) {
  for (const auto& c : conds) {
    if (c.type == type) return &c;
  }
  return nullptr;
}

}  // namespace hpc::op
