// The control plane's terminal sessions (terminal_hub.h): each session is its owner's and its
// data plane's only, its queues are bounded, and every way it ends reaches both sides.
#include "server/terminal_hub.h"

#include <gtest/gtest.h>

#include <future>
#include <thread>

namespace hpc::cp {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

const TerminalOwner kAnn = {"ann", "astro", "ann-astro", "dp1"};

TEST(TerminalHub, ASessionIsItsOwnersAndItsDataPlanesOnly) {
  TerminalHub hub;
  auto id = hub.Open(kAnn);
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->size(), 32u);
  EXPECT_EQ(hub.OwnerOf(*id, "bob").status().code(), StatusCode::kNotFound);
  EXPECT_EQ(hub.Input(*id, "bob", {{"data", "rm -rf ~\n"}}).code(), StatusCode::kNotFound);
  EXPECT_EQ(hub.Output(*id, "bob", 0, milliseconds(0)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(hub.Close(*id, "bob", "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(hub.TakeInput(*id, "dp2", milliseconds(0)).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(hub.PutOutput(*id, "dp2", "forged", std::nullopt).code(), StatusCode::kNotFound);

  ASSERT_TRUE(hub.Input(*id, "ann", {{"data", "ls\n"}}).ok());
  ASSERT_TRUE(hub.Input(*id, "ann", {{"resize", {{"cols", 100}, {"rows", 30}}}}).ok());
  auto in = hub.TakeInput(*id, "dp1", milliseconds(0));
  ASSERT_TRUE(in.ok());
  ASSERT_EQ(in->events.size(), 2u) << "in the order typed";
  EXPECT_EQ(in->events[0]["data"], "ls\n");
  EXPECT_EQ(in->events[1]["resize"]["cols"], 100);
  EXPECT_FALSE(in->closed);
}

TEST(TerminalHub, OutputIsReadFromAnOffsetAndWaitedFor) {
  TerminalHub hub;
  auto id = *hub.Open(kAnn);
  auto later = std::async(std::launch::async, [&] { return hub.Output(id, "ann", 0, milliseconds(5000)); });
  std::this_thread::sleep_for(milliseconds(50));  // a read waits for output rather than polling
  ASSERT_TRUE(hub.PutOutput(id, "dp1", "$ ", std::nullopt).ok());
  auto first = later.get();
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->data, "$ ");
  EXPECT_EQ(first->next, 2u);
  ASSERT_TRUE(hub.PutOutput(id, "dp1", "ls\n", std::nullopt).ok());
  auto second = hub.Output(id, "ann", first->next, milliseconds(0));
  EXPECT_EQ(second->data, "ls\n");
  EXPECT_EQ(second->offset, 2u);
  EXPECT_EQ(second->next, 5u);
  auto none = hub.Output(id, "ann", 5, milliseconds(10));
  EXPECT_EQ(none->data, "");
  EXPECT_EQ(none->next, 5u);
}

TEST(TerminalHub, OldOutputAndUntakenInputAreBounded) {
  TerminalHub hub;
  auto id = *hub.Open(kAnn);
  const std::string mib(TerminalHub::kMaxOutputBytes, 'x');
  ASSERT_TRUE(hub.PutOutput(id, "dp1", mib, std::nullopt).ok());
  ASSERT_TRUE(hub.PutOutput(id, "dp1", "tail", std::nullopt).ok());
  auto out = hub.Output(id, "ann", 0, milliseconds(0));
  EXPECT_EQ(out->offset, 4u) << "the oldest bytes went; the read says where it starts";
  EXPECT_EQ(out->data.size(), TerminalHub::kMaxOutputBytes);
  EXPECT_EQ(out->data.substr(out->data.size() - 4), "tail");
  const std::string big(TerminalHub::kMaxPendingInputBytes, 'y');
  ASSERT_TRUE(hub.Input(id, "ann", {{"data", big}}).ok());
  EXPECT_EQ(hub.Input(id, "ann", {{"data", "z"}}).code(), StatusCode::kUnavailable) << "the agent takes nothing";
  ASSERT_TRUE(hub.TakeInput(id, "dp1", milliseconds(0)).ok());
  EXPECT_TRUE(hub.Input(id, "ann", {{"data", "z"}}).ok()) << "taken: room again";
}

TEST(TerminalHub, AUserHasAtMostFourOpen) {
  TerminalHub hub;
  std::vector<std::string> ids;
  for (size_t i = 0; i < TerminalHub::kMaxPerUser; ++i) ids.push_back(*hub.Open(kAnn));
  EXPECT_EQ(hub.Open(kAnn).status().code(), StatusCode::kUnavailable);
  EXPECT_TRUE(hub.Open({"bob", "astro", "bob-astro", "dp1"}).ok()) << "another user is not held by ann's";
  ASSERT_TRUE(hub.Close(ids[0], "ann", "closed by its user").ok());
  EXPECT_TRUE(hub.Open(kAnn).ok());
}

TEST(TerminalHub, EveryEndReachesBothSides) {
  TerminalHub hub(std::chrono::seconds(0));
  auto closed_by_user = *hub.Open(kAnn);
  auto agent_waits =
      std::async(std::launch::async, [&] { return hub.TakeInput(closed_by_user, "dp1", milliseconds(5000)); });
  ASSERT_TRUE(hub.Close(closed_by_user, "ann", "closed by its user").ok());
  EXPECT_TRUE(agent_waits.get()->closed) << "the agent's poll returns at once and ends the shell";
  EXPECT_EQ(hub.Input(closed_by_user, "ann", {{"data", "x"}}).code(), StatusCode::kFailedPrecondition);

  auto exited = *hub.Open(kAnn);
  ASSERT_TRUE(hub.PutOutput(exited, "dp1", "bye\n", std::string("the shell exited 0")).ok());
  auto out = hub.Output(exited, "ann", 0, milliseconds(0));
  EXPECT_EQ(out->data, "bye\n") << "what it wrote last is still read";
  EXPECT_TRUE(out->closed);
  EXPECT_EQ(out->reason, "the shell exited 0");

  auto idle = *hub.Open(kAnn);
  std::this_thread::sleep_for(milliseconds(1100));
  hub.Reap();  // nobody read it for longer than the idle time (0 s here)
  EXPECT_TRUE(hub.TakeInput(idle, "dp1", milliseconds(0))->closed);

  auto open = *hub.Open(kAnn);
  hub.Shutdown();
  EXPECT_TRUE(hub.Output(open, "ann", 0, milliseconds(5000))->closed) << "a stopping server ends every read";
}

}  // namespace
}  // namespace hpc::cp
