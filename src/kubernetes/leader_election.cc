#include "kubernetes/leader_election.h"

#include <sys/time.h>

#include <ctime>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace hpc::kube {

using nlohmann::json;

std::string MicroTimeNow() {
  struct timeval tv {};
  ::gettimeofday(&tv, nullptr);
  std::tm tm{};
  ::gmtime_r(&tv.tv_sec, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long>(tv.tv_usec));
}

LeaderElector::LeaderElector(std::shared_ptr<runtime::kubernetes::ApiClient> api, std::string namespace_name,
                             std::string name, std::string identity, std::chrono::seconds lease_duration)
    : api_(std::move(api)),
      namespace_(std::move(namespace_name)),
      name_(std::move(name)),
      identity_(std::move(identity)),
      duration_(lease_duration) {}

std::string LeaderElector::Path() const {
  return fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases/{}", namespace_, name_);
}

bool LeaderElector::Write(const json& lease, bool create) {
  auto r = create ? api_->Post(fmt::format("/apis/coordination.k8s.io/v1/namespaces/{}/leases", namespace_), lease)
                  : api_->Put(Path(), lease);
  if (!r.ok()) {
    // 409: another replica wrote first. Anything else: we cannot tell, so we do not lead.
    if (r.status().code() != StatusCode::kConflict && r.status().code() != StatusCode::kAlreadyExists) {
      spdlog::warn("lease {}: {}", name_, r.status().message());
    }
    return false;
  }
  renewed_at_ = Clock::now();
  return true;
}

bool LeaderElector::TryAcquireOrRenew() {
  const auto now = Clock::now();
  const bool was_leading = leading_;
  auto current = api_->Get(Path());
  if (!current.ok() && current.status().code() == StatusCode::kNotFound) {
    const std::string t = MicroTimeNow();
    json lease = {{"apiVersion", "coordination.k8s.io/v1"},
                  {"kind", "Lease"},
                  {"metadata", {{"name", name_}, {"namespace", namespace_}}},
                  {"spec",
                   {{"holderIdentity", identity_},
                    {"leaseDurationSeconds", duration_.count()},
                    {"acquireTime", t},
                    {"renewTime", t},
                    {"leaseTransitions", 0}}}};
    leading_ = Write(lease, true);
  } else if (!current.ok()) {
    spdlog::warn("lease {}: {}", name_, current.status().message());
    // Unable to renew: a leader keeps leading only until its last renewal would have expired.
    leading_ = leading_ && now - renewed_at_ < duration_;
  } else {
    json lease = *current;
    json spec = lease.value("spec", json::object());
    const std::string holder = spec.value("holderIdentity", "");
    const std::string record = holder + "@" + spec.value("renewTime", "");
    if (record != observed_record_) {
      observed_record_ = record;
      observed_at_ = now;
    }
    const auto held_for =
        std::chrono::seconds(spec.value("leaseDurationSeconds", static_cast<int64_t>(duration_.count())));
    if (!holder.empty() && holder != identity_ && now - observed_at_ < held_for) {
      leading_ = false;
    } else {
      if (holder != identity_) {
        spec["acquireTime"] = MicroTimeNow();
        spec["leaseTransitions"] = spec.value("leaseTransitions", 0) + 1;
      }
      spec["holderIdentity"] = identity_;
      spec["leaseDurationSeconds"] = duration_.count();
      spec["renewTime"] = MicroTimeNow();
      lease["spec"] = spec;
      leading_ = Write(lease, false);
      if (!leading_ && was_leading) leading_ = now - renewed_at_ < duration_;
    }
  }
  if (leading_ != was_leading) {
    spdlog::info("lease {}: {} leading as {}", name_, leading_ ? "started" : "stopped", identity_);
  }
  return leading_;
}

void LeaderElector::Release() {
  if (!leading_) return;
  auto current = api_->Get(Path());
  if (current.ok() && (*current)["spec"].value("holderIdentity", "") == identity_) {
    json lease = *current;
    lease["spec"]["holderIdentity"] = "";
    lease["spec"]["leaseDurationSeconds"] = 1;
    lease["spec"]["renewTime"] = MicroTimeNow();
    (void)api_->Put(Path(), lease);
  }
  leading_ = false;
  spdlog::info("lease {}: released by {}", name_, identity_);
}

}  // namespace hpc::kube
