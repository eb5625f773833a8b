// The relay: requests the control plane has for a data plane's agent (messages/relay_messages.h),
// and their answers. The control plane never dials a data plane (it may sit behind NAT or a firewall that only lets it
// call out): its agent keeps a long poll open (GET /api/v1/dataplanes/{name}/relay), which returns as soon as a request
// is queued for it; the agent runs the request on the data plane and posts the answer, and the caller waiting in Call
// gets it. Bounded: a data plane has at most `max_pending` requests waiting at once, and every wait has a deadline.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"
#include "messages/relay_messages.h"

namespace hpc::cp {

class RelayHub {
 public:
  explicit RelayHub(size_t max_pending_per_data_plane = 64) : max_pending_(max_pending_per_data_plane) {}

  // Queues `request` (a JSON object) for `data_plane`'s agent and waits until `timeout` for its
  // answer. Unavailable when too many requests wait for that agent already, when it did not
  // take the request in time (no agent polls) or did not answer it in time, or on Shutdown.
  Result<nlohmann::json> Call(const std::string& data_plane, nlohmann::json request, std::chrono::milliseconds timeout);
  // The requests queued for `data_plane`, each with its "id" added; waits up to `wait` for the
  // first one. Empty after the wait, or on Shutdown.
  std::vector<nlohmann::json> Take(const std::string& data_plane, std::chrono::milliseconds wait);
  // The agent's answer to request `id`. NotFound when no call waits for that id from this data
  // plane (it timed out, was answered already, or is another data plane's).
  Status Answer(const std::string& data_plane, const std::string& id, nlohmann::json answer);
  // Wakes every waiter: calls fail, takes return empty, and later ones do at once.
  void Shutdown();

 private:
  struct Pending {
    std::string data_plane;
    nlohmann::json request;
    bool taken = false;
    std::optional<nlohmann::json> answer;
  };
  size_t PendingFor(const std::string& data_plane) const;  // holds mu_

  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, std::shared_ptr<Pending>> pending_;  // by id
  bool shutdown_ = false;
};

}  // namespace hpc::cp
