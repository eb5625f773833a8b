// The tunnels' bookkeeping: who may join which end, and the bounds. Messages passing through
// joined ends over real sockets are routes_test.cc's (JupyterLab through the agent).
#include "server/tunnel_hub.h"

#include <gtest/gtest.h>

namespace hpc::cp {
namespace {

// A handle of no connection: what it is sent goes nowhere.
std::shared_ptr<ws::Connection> Detached() {
  return std::make_shared<ws::Connection>(std::weak_ptr<ws::Connection::Impl>(), nullptr);
}

TEST(TunnelHubTest, OnlyItsDataPlanesAgentJoinsATunnelAndEachEndJoinsOnce) {
  TunnelHub hub;
  auto id = hub.Create("dp1");
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(id->size(), 32u);
  EXPECT_FALSE(hub.Waits(*id, TunnelHub::End::kAgent, "dp2"));
  EXPECT_TRUE(hub.Waits(*id, TunnelHub::End::kAgent, "dp1"));
  EXPECT_EQ(hub.Join(*id, TunnelHub::End::kAgent, "dp2", Detached()).code(), StatusCode::kNotFound)
      << "another data plane's agent";
  EXPECT_FALSE(hub.WaitForAgent(*id, std::chrono::milliseconds(10)));
  hub.Forward(*id, TunnelHub::End::kBrowser, "early", false);  // kept for the agent's end
  ASSERT_TRUE(hub.Join(*id, TunnelHub::End::kAgent, "dp1", Detached()).ok());
  EXPECT_TRUE(hub.WaitForAgent(*id, std::chrono::milliseconds(10)));
  EXPECT_EQ(hub.Join(*id, TunnelHub::End::kAgent, "dp1", Detached()).code(), StatusCode::kNotFound) << "joined once";
  ASSERT_TRUE(hub.Join(*id, TunnelHub::End::kBrowser, "", Detached()).ok());
  EXPECT_EQ(hub.Join("0123", TunnelHub::End::kBrowser, "", Detached()).code(), StatusCode::kNotFound);
  hub.Closed(*id, {1006, ""});
  EXPECT_EQ(hub.Open(), 0u);
  EXPECT_FALSE(hub.Waits(*id, TunnelHub::End::kBrowser, ""));
}

TEST(TunnelHubTest, TooMuchWaitingClosesTheTunnelAndOpenTunnelsAreBounded) {
  TunnelHub hub(2, 10);
  auto a = hub.Create("dp1");
  ASSERT_TRUE(a.ok());
  hub.Forward(*a, TunnelHub::End::kAgent, "0123456789", true);
  EXPECT_EQ(hub.Open(), 1u);
  hub.Forward(*a, TunnelHub::End::kAgent, "x", true);
  EXPECT_EQ(hub.Open(), 0u) << "more than 10 bytes waited for the browser's end";
  ASSERT_TRUE(hub.Create("dp1").ok());
  ASSERT_TRUE(hub.Create("dp1").ok());
  auto third = hub.Create("dp1");
  EXPECT_EQ(third.status().code(), StatusCode::kUnavailable);
  hub.Shutdown();
  EXPECT_EQ(hub.Open(), 0u);
  EXPECT_EQ(hub.Create("dp1").status().code(), StatusCode::kUnavailable) << "stopping";
}

}  // namespace
}  // namespace hpc::cp
