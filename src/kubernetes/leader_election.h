// Leader election with a coordination.k8s.io/v1 Lease, as client-go's leaderelection does, so
// that two operator replicas can run and only one acts. A lease whose record has not changed
// for its duration (measured on this process's clock, never by comparing clocks) is free to
// take; the leader renews it well within that, and stops leading once it could not renew in
// time. A leader that stops releases the lease, so the next one takes over at once.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "runtime/kubernetes/api_client.h"

namespace hpc::kube {

class LeaderElector {
 public:
  using Clock = std::chrono::steady_clock;
  LeaderElector(std::shared_ptr<runtime::kubernetes::ApiClient> api, std::string namespace_name, std::string name,
                std::string identity, std::chrono::seconds lease_duration);

  // One round: acquires, renews or observes the lease. True while this process leads.
  bool TryAcquireOrRenew();
  // Gives the lease up (when leading) so that another replica need not wait for it to expire.
  void Release();
  bool leading() const { return leading_; }
  const std::string& identity() const { return identity_; }

 private:
  std::string Path() const;
  bool Write(const nlohmann::json& lease, bool create);

  std::shared_ptr<runtime::kubernetes::ApiClient> api_;
  std::string namespace_;
  std::string name_;
  std::string identity_;
  std::chrono::seconds duration_;
  std::string observed_record_;  // holder and renew time last seen
  Clock::time_point observed_at_{};
  Clock::time_point renewed_at_{};
  std::atomic<bool> leading_{false};  // read by the operator's workers
};

// RFC 3339 with microseconds (a Lease's MicroTime).
std::string MicroTimeNow();

}  // namespace hpc::kube
