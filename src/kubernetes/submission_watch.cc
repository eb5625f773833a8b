#include "kubernetes/submission_watch.h"

#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/kubernetes/exec_stream.h"
#include "slurm/config.h"

namespace hpc::kube {

namespace {

// Perl, because every Debian image has it (perl-base is essential) and it reads a file and sleeps
// without starting a process: a shell loop would fork stat and sleep ten times a second.
constexpr const char* kPollProgram =
    "my ($m, $last, $rounds) = @ARGV;"
    "for (1 .. $rounds) {"
    "  my $now = '';"
    "  if (open(my $f, '<', $m)) { read($f, $now, 256); close $f; }"
    "  if ($now ne $last) { print $now; exit 0; }"
    "  select(undef, undef, undef, 0.1);"
    "}"
    "print $last;";

}  // namespace

std::vector<std::string> SubmissionWatch::PollCommand(const std::string& last, std::chrono::milliseconds poll_for) {
  return {"perl",       "-e",
          kPollProgram, fmt::format("{}/{}", slurm::kStateSaveDir, slurm::kSubmitMarkerFile),
          last,         std::to_string(std::max<int64_t>(1, poll_for.count() / 100))};
}

SubmissionWatch::Exec SubmissionWatch::InControllerPod(std::shared_ptr<runtime::kubernetes::ApiClient> api,
                                                       const runtime::kubernetes::ObjectContext& ctx,
                                                       const std::string& pod) {
  runtime::kubernetes::PodExecRequest request;
  request.namespace_name = ctx.namespace_name;
  request.pod = runtime::kubernetes::ObjectName(ctx, pod);
  request.container = "controller";
  return [api = std::move(api), request](const std::vector<std::string>& argv, std::chrono::milliseconds timeout,
                                         std::shared_ptr<const std::atomic<bool>> cancelled) {
    runtime::kubernetes::PodExecRequest r = request;
    r.argv = {"setpriv", "--reuid=slurm", "--regid=slurm", "--init-groups", "--"};
    r.argv.insert(r.argv.end(), argv.begin(), argv.end());
    r.timeout = timeout;
    r.cancelled = std::move(cancelled);
    return runtime::kubernetes::ExecInPod(*api, r);
  };
}

SubmissionWatch::SubmissionWatch(std::string name, Exec exec, std::function<void()> on_submission, Options options)
    : on_submission_(std::move(on_submission)) {
  thread_ = std::thread([this, name = std::move(name), exec = std::move(exec), options]() mutable {
    Run(std::move(name), std::move(exec), options);
  });
}

SubmissionWatch::~SubmissionWatch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    cancelled_->store(true);
    cv_.notify_all();
  }
  thread_.join();
}

void SubmissionWatch::Run(std::string name, Exec exec, Options options) {
  std::optional<std::string> seen;  // the marker's content at the last answer
  bool failing = false;
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return;
    }
    auto r = exec(PollCommand(seen.value_or("-"), options.poll_for), options.poll_for + std::chrono::seconds(15),
                  cancelled_);
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_) return;
    if (!r.ok() || r->timed_out || r->exit_code != 0) {
      // Said once a failing spell (the controller pod starting fails every try for a while).
      const std::string why =
          r.ok() ? fmt::format("exit {}{}: {}", r->exit_code, r->timed_out ? " (timed out)" : "", r->err.substr(0, 300))
                 : r.status().message();
      if (!failing) {
        spdlog::info("{}: submission watch: {}; trying again every {} ms", name, why, options.retry_after.count());
      }
      failing = true;
      cv_.wait_for(lock, options.retry_after, [&] { return stopped_; });
      continue;
    }
    if (failing || !seen) spdlog::info("{}: submission watch: watching", name);
    failing = false;
    const bool changed = seen.has_value() && r->out != *seen;
    seen = r->out;
    if (changed) {
      on_submission_();
      cv_.wait_for(lock, options.min_gap, [&] { return stopped_; });
    }
  }
}

}  // namespace hpc::kube
