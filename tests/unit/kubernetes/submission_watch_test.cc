#include "kubernetes/submission_watch.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>

namespace hpc::kube {
namespace {

using namespace std::chrono_literals;

// What the controller pod's poll program answers, one answer an exec, from a script the test
// writes; an exec past the script waits (as the real one does for 25 s) until the test ends. The
// exec shares the script's state: the watch's thread may outlive the test's objects.
class ScriptedPod {
 public:
  explicit ScriptedPod(std::deque<Result<ProcessResult>> answers) : s_(std::make_shared<State>()) {
    s_->answers = std::move(answers);
  }
  // The watch's exec: it shares the script's state, and gives up when cancelled, as ExecInPod does.
  SubmissionWatch::Exec exec() {
    return [s = s_](const std::vector<std::string>& argv, std::chrono::milliseconds,
                    std::shared_ptr<const std::atomic<bool>> cancelled) -> Result<ProcessResult> {
      std::unique_lock<std::mutex> lock(s->mu);
      s->args.push_back(argv);
      s->cv.notify_all();
      while (s->answers.empty() && !s->done) {
        if (cancelled->load()) {
          ++s->cancelled;
          return Status::Unavailable("exec: cancelled");
        }
        s->cv.wait_for(lock, 10ms);
      }
      if (s->answers.empty()) return Status::Unavailable("the test ended");
      auto a = std::move(s->answers.front());
      s->answers.pop_front();
      return a;
    };
  }
  int Cancelled() {
    std::lock_guard<std::mutex> lock(s_->mu);
    return s_->cancelled;
  }
  ~ScriptedPod() {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->done = true;
    s_->cv.notify_all();
  }
  bool WaitForExecs(size_t n, std::chrono::milliseconds within = 10s) {
    std::unique_lock<std::mutex> lock(s_->mu);
    return s_->cv.wait_for(lock, within, [&] { return s_->args.size() >= n; });
  }
  void Answer(Result<ProcessResult> a) {
    std::lock_guard<std::mutex> lock(s_->mu);
    s_->answers.push_back(std::move(a));
    s_->cv.notify_all();
  }
  std::vector<std::string> Args(size_t i) {
    std::lock_guard<std::mutex> lock(s_->mu);
    return s_->args.at(i);
  }

 private:
  struct State {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Result<ProcessResult>> answers;
    std::vector<std::vector<std::string>> args;
    bool done = false;
    int cancelled = 0;
  };
  std::shared_ptr<State> s_;
};

ProcessResult Said(std::string out) {
  ProcessResult r;
  r.exit_code = 0;
  r.out = std::move(out);
  return r;
}

// The first answer is the marker as it was (no submission); each later answer that differs from
// the one before is one, and each poll passes on what the last one read.
TEST(SubmissionWatch, CallsBackForEachChangeAfterTheFirstRead) {
  ScriptedPod pod({Said("100 1\n"), Said("100 1\n"), Said("100 2\n"), Said("101 3\n")});
  std::atomic<int> calls = 0;
  SubmissionWatch watch("c1", pod.exec(), [&] { ++calls; }, {1s, 1s, 0ms});
  ASSERT_TRUE(pod.WaitForExecs(5));
  EXPECT_EQ(calls.load(), 2);
  const auto first = pod.Args(0);
  ASSERT_EQ(first.size(), 6u);
  EXPECT_EQ(first[0], "perl");
  EXPECT_EQ(first[3], "/run/slurm/state/hpcplane-submitted");
  EXPECT_EQ(first[4], "-");   // nothing read yet: answer at once
  EXPECT_EQ(first[5], "10");  // 1 s in 100-ms rounds
  EXPECT_EQ(pod.Args(1)[4], "100 1\n");
  EXPECT_EQ(pod.Args(3)[4], "100 2\n");
  EXPECT_EQ(pod.Args(4)[4], "101 3\n");
}

// A failed exec (the controller pod not running yet) is tried again after a pause, and is no
// submission; nor is the first answer after it when the marker did not change.
TEST(SubmissionWatch, RetriesAFailedExecWithoutCallingBack) {
  ScriptedPod pod(
      {Said("7 1\n"), Status::Unavailable("pod c1-controller is not running"), Said("7 1\n"), Said("8 2\n")});
  std::atomic<int> calls = 0;
  SubmissionWatch watch("c1", pod.exec(), [&] { ++calls; }, {1s, 1s, 0ms});
  ASSERT_TRUE(pod.WaitForExecs(5));
  EXPECT_EQ(calls.load(), 1);
  EXPECT_EQ(pod.Args(2)[4], "7 1\n");
}

// Stopping cancels the exec in flight (a 25-s poll) and waits for the thread: nothing is called
// back after, and no further exec starts.
TEST(SubmissionWatch, StoppingCancelsThePollInFlight) {
  ScriptedPod pod({Said("1 1\n")});
  std::atomic<int> calls = 0;
  auto watch = std::make_unique<SubmissionWatch>(
      "c1", pod.exec(), [&] { ++calls; }, SubmissionWatch::Options{25s, 1s, 0ms});
  ASSERT_TRUE(pod.WaitForExecs(2));  // the second poll is in flight
  const auto t0 = std::chrono::steady_clock::now();
  watch.reset();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 5s) << "the destructor waited for the poll to end";
  EXPECT_EQ(pod.Cancelled(), 1);
  pod.Answer(Said("2 2\n"));
  EXPECT_FALSE(pod.WaitForExecs(3, 200ms)) << "no poll after the stop";
  EXPECT_EQ(calls.load(), 0);
}

// A change is followed by a pause before the next poll (a burst of submissions is a few execs).
TEST(SubmissionWatch, AChangeIsFollowedByAPause) {
  ScriptedPod pod({Said("1 1\n"), Said("2 2\n"), Said("2 2\n")});
  SubmissionWatch watch("c1", pod.exec(), [] {}, {1s, 1s, 300ms});
  ASSERT_TRUE(pod.WaitForExecs(2));
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(pod.WaitForExecs(3));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 250ms);
}

}  // namespace
}  // namespace hpc::kube
