// The shared step runner: waiting and failing are told apart by the status code, and a step
// that others need stops the run.
#include "operator/steps.h"

#include <gtest/gtest.h>

namespace hpc::op {
namespace {

TEST(RunSteps, WaitingAndFailingAreToldApartByCode) {
  std::vector<std::string> ran;
  auto step = [&](std::string name, Status s, bool stop = false) {
    return Step{name,
                [&ran, name, s] {
                  ran.push_back(name);
                  return s;
                },
                stop};
  };
  auto out = RunSteps("test", {step("a", Status::Ok()), step("b", Status::FailedPrecondition("waiting for x")),
                               step("c", Status::Error("disk full")), step("d", Status::FailedPrecondition("y"))});
  EXPECT_EQ(ran, (std::vector<std::string>{"a", "b", "c", "d"}));
  EXPECT_EQ(out.waiting, "waiting for x") << "the first reason to wait";
  EXPECT_EQ(out.failures, std::vector<std::string>{"c: disk full"});
  EXPECT_FALSE(out.done());
  EXPECT_EQ(out.FirstProblem(), "c: disk full") << "a failure outranks waiting";
  // The message's words do not matter: "waiting" in an Internal error is still a failure.
  out = RunSteps("test", {step("e", Status::Internal("waiting forever"))});
  EXPECT_EQ(out.failures.size(), 1u);
  EXPECT_TRUE(out.waiting.empty());
}

TEST(RunSteps, AStepOthersNeedStopsTheRunWhetherWaitingOrFailing) {
  std::vector<std::string> ran;
  auto step = [&](std::string name, Status s, bool stop = false) {
    return Step{name,
                [&ran, name, s] {
                  ran.push_back(name);
                  return s;
                },
                stop};
  };
  auto out =
      RunSteps("test", {step("keys", Status::FailedPrecondition("no entropy yet"), true), step("pods", Status::Ok())});
  EXPECT_EQ(ran, std::vector<std::string>{"keys"});
  ran.clear();
  out = RunSteps("test", {step("keys", Status::Ok(), true), step("pods", Status::Ok())});
  EXPECT_EQ(ran, (std::vector<std::string>{"keys", "pods"}));
  EXPECT_TRUE(out.done());
}

}  // namespace
}  // namespace hpc::op
