#include "kubernetes/submission_watch.h"

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "runtime/kubernetes/exec_stream.h"
#include "slurm/config.h"

namespace hpc::kube {

struct SubmissionWatch::Shared {
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  std::string name;  // the cluster's, for the log
  std::function<void()> on_submission;
};

namespace {

// Perl, because every Debian image has it (perl-base is essential) and it reads a file and sleeps
// without starting a process: a shell loop would fork stat and sleep ten times a second.
constexpr const char* kPollProgram =
    "my ($m, $last, $rounds) = @ARGV;"
    "for (1 .. $rounds) {"
    "  my $now = '';"
    "  if (open(my $f, '<', $m)) { local $/; $now = <$f> // ''; close $f; }"
    "  if ($now ne $last) { print $now; exit 0; }"
    "  select(undef, undef, undef, 0.1);"
    "}"
    "print $last;";

}  // namespace

std::vector<std::string> SubmissionWatch::PollCommand(const std::string& last, std::chrono::seconds poll_for) {
  return {"perl",       "-e",
          kPollProgram, fmt::format("{}/{}", slurm::kStateSaveDir, slurm::kSubmitMarkerFile),
          last,         std::to_string(std::max<int64_t>(1, poll_for.count() * 10))};
}

SubmissionWatch::Exec SubmissionWatch::InControllerPod(std::shared_ptr<runtime::kubernetes::ApiClient> api,
                                                       const runtime::kubernetes::ObjectContext& ctx,
                                                       const std::string& pod) {
  runtime::kubernetes::PodExecRequest request;
  request.namespace_name = ctx.namespace_name;
  request.pod = runtime::kubernetes::ObjectName(ctx, pod);
  request.container = "controller";
  return [api = std::move(api), request](const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
    runtime::kubernetes::PodExecRequest r = request;
    r.argv = {"setpriv", "--reuid=slurm", "--regid=slurm", "--init-groups", "--"};
    r.argv.insert(r.argv.end(), argv.begin(), argv.end());
    r.timeout = timeout;
    return runtime::kubernetes::ExecInPod(*api, r);
  };
}

SubmissionWatch::SubmissionWatch(std::string name, Exec exec, std::function<void()> on_submission, Options options)
    : shared_(std::make_shared<Shared>()) {
  shared_->name = std::move(name);
  shared_->on_submission = std::move(on_submission);
  // Detached: an exec cannot be interrupted, and Stop() must not wait up to poll_for for one.
  // The thread holds what it uses (the exec, the shared state) and calls back only under the
  // lock, while not stopped.
  std::thread([shared = shared_, exec = std::move(exec), options] {
    std::optional<std::string> seen;  // the marker's content at the last answer
    bool failing = false;
    for (;;) {
      {
        std::lock_guard<std::mutex> lock(shared->mu);
        if (shared->stopped) return;
      }
      auto r = exec(PollCommand(seen.value_or("-"), options.poll_for), options.poll_for + std::chrono::seconds(15));
      std::unique_lock<std::mutex> lock(shared->mu);
      if (shared->stopped) return;
      if (!r.ok() || r->timed_out || r->exit_code != 0) {
        // Said once a failing spell (the controller pod starting fails every try for a while).
        const std::string why = r.ok() ? fmt::format("exit {}{}: {}", r->exit_code, r->timed_out ? " (timed out)" : "",
                                                     r->err.substr(0, 300))
                                       : r.status().message();
        if (!failing)
          spdlog::info("{}: submission watch: {}; trying again every {} s", shared->name, why,
                       options.retry_after.count());
        failing = true;
        shared->cv.wait_for(lock, options.retry_after, [&] { return shared->stopped; });
        continue;
      }
      if (failing || !seen) spdlog::info("{}: submission watch: watching", shared->name);
      failing = false;
      const bool changed = seen.has_value() && r->out != *seen;
      seen = r->out;
      if (changed) shared->on_submission();
    }
  }).detach();
}

void SubmissionWatch::Stop() {
  std::lock_guard<std::mutex> lock(shared_->mu);
  shared_->stopped = true;
  shared_->cv.notify_all();
}

}  // namespace hpc::kube
