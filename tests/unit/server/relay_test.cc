// The relay between the control plane and its agents (relay_hub.h): a request reaches only its own
// data plane's agent, its answer only the caller waiting for it, and every wait ends.
#include "server/relay_hub.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace hpc::cp {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

TEST(RelayHub, ARequestIsTakenByItsDataPlanesAgentAndItsAnswerReturned) {
  RelayHub hub;
  auto call = std::async(std::launch::async, [&] { return hub.Call("dp1", {{"kind", "echo"}}, milliseconds(5000)); });
  EXPECT_TRUE(hub.Take("dp2", milliseconds(50)).empty()) << "another data plane's agent sees nothing";
  auto taken = hub.Take("dp1", milliseconds(5000));
  ASSERT_EQ(taken.size(), 1u);
  EXPECT_EQ(taken[0]["kind"], "echo");
  const std::string id = taken[0]["id"];
  EXPECT_EQ(id.size(), 32u) << "ids are 16 random bytes in hex";
  EXPECT_TRUE(hub.Take("dp1", milliseconds(10)).empty()) << "a request is taken once";
  EXPECT_EQ(hub.Answer("dp2", id, {{"x", 1}}).code(), StatusCode::kNotFound) << "only its own data plane answers";
  ASSERT_TRUE(hub.Answer("dp1", id, {{"x", 2}}).ok());
  auto answer = call.get();
  ASSERT_TRUE(answer.ok()) << answer.status().message();
  EXPECT_EQ((*answer)["x"], 2);
  EXPECT_EQ(hub.Answer("dp1", id, {{"x", 3}}).code(), StatusCode::kNotFound) << "answered once";
}

TEST(RelayHub, ACallEndsAtItsDeadlineSayingWhetherTheAgentTookIt) {
  RelayHub hub;
  auto untaken = hub.Call("dp1", {{"kind", "echo"}}, milliseconds(100));
  ASSERT_EQ(untaken.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(untaken.status().message().find("did not pick the request up"), std::string::npos)
      << untaken.status().message();
  EXPECT_TRUE(hub.Take("dp1", milliseconds(10)).empty()) << "a call that gave up leaves nothing queued";

  auto call = std::async(std::launch::async, [&] { return hub.Call("dp1", {{"kind", "echo"}}, milliseconds(300)); });
  auto taken = hub.Take("dp1", milliseconds(5000));
  ASSERT_EQ(taken.size(), 1u);
  auto unanswered = call.get();
  EXPECT_NE(unanswered.status().message().find("did not answer within"), std::string::npos)
      << unanswered.status().message();
  EXPECT_EQ(hub.Answer("dp1", taken[0]["id"], json::object()).code(), StatusCode::kNotFound)
      << "an answer after the deadline has nobody to go to";
}

TEST(RelayHub, ADataPlaneHasBoundedRequestsWaiting) {
  RelayHub hub(2);
  auto a = std::async(std::launch::async, [&] { return hub.Call("dp1", json::object(), milliseconds(2000)); });
  auto b = std::async(std::launch::async, [&] { return hub.Call("dp1", json::object(), milliseconds(2000)); });
  // Both are queued once the agent can take two.
  std::vector<json> taken;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (taken.size() < 2 && std::chrono::steady_clock::now() < deadline) {
    for (auto& r : hub.Take("dp1", milliseconds(100))) taken.push_back(r);
  }
  ASSERT_EQ(taken.size(), 2u);
  auto refused = hub.Call("dp1", json::object(), milliseconds(2000));
  EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(refused.status().message().find("2 requests waiting"), std::string::npos) << refused.status().message();
  EXPECT_FALSE(hub.Call("dp2", json::object(), milliseconds(10)).status().message().find("waiting") !=
               std::string::npos)
      << "another data plane is not held by dp1's";
  for (const auto& r : taken) ASSERT_TRUE(hub.Answer("dp1", r["id"], json::object()).ok());
  EXPECT_TRUE(a.get().ok());
  EXPECT_TRUE(b.get().ok());
}

TEST(RelayHub, AnAnswersErrorKeepsItsCodeAndAMalformedOneIsTheAgents) {
  for (const Status& s :
       {Status::NotFound("gone"), Status::FailedPrecondition("pending"), Status::Unavailable("away")}) {
    const Status back = RelayAnswerError(RelayError(s), "x");
    EXPECT_EQ(back.code(), s.code());
    EXPECT_EQ(back.message(), s.message());
  }
  EXPECT_EQ(RelayAnswerError(RelayError(Status::Internal("boom")), "x").code(), StatusCode::kUnavailable);
  EXPECT_TRUE(RelayAnswerError({{"text", "fine"}}, "x").ok());
  const Status odd = RelayAnswerError({{"error", {{"code", 7}, {"message", 8}}}}, "the agent failed");
  EXPECT_EQ(odd.code(), StatusCode::kUnavailable) << "never thrown on, never blamed on the caller";
  EXPECT_EQ(odd.message(), "the agent failed");
  EXPECT_EQ(RelayAnswerError(json::array(), "x").code(), StatusCode::kUnavailable);
}

TEST(RelayHub, ShutdownEndsEveryWait) {
  RelayHub hub;
  auto call = std::async(std::launch::async, [&] { return hub.Call("dp1", json::object(), milliseconds(60000)); });
  auto take = std::async(std::launch::async, [&] { return hub.Take("dp9", milliseconds(60000)); });
  // The call is queued before shutdown, or refused by it: either way it ends.
  hub.Take("dp1", milliseconds(5000));
  const auto start = std::chrono::steady_clock::now();
  hub.Shutdown();
  EXPECT_EQ(call.get().status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(take.get().empty());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(hub.Call("dp1", json::object(), milliseconds(60000)).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hpc::cp
