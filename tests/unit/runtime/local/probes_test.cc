// The local runtime's HTTP probes against a real HTTP server on loopback: with a path, only a
// 2xx status is ready; without one, any answer is alive (a hung server is not).
#include <httplib.h>

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "runtime/local/local_runtime_internal.h"

namespace hpc::runtime::local {
namespace {

class ProbesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_.Get("/readyz",
                [this](const httplib::Request&, httplib::Response& res) { res.status = ready_ ? 204 : 503; });
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  void TearDown() override {
    server_.stop();
    thread_.join();
  }
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<bool> ready_{false};
};

TEST_F(ProbesTest, APathIsReadyOnlyOnA2xxAndNoPathOnAnyAnswer) {
  EXPECT_FALSE(HttpAnswers("127.0.0.1", port_, 2000, "/readyz")) << "503 is not ready";
  ready_ = true;
  EXPECT_TRUE(HttpAnswers("127.0.0.1", port_, 2000, "/readyz"));
  EXPECT_FALSE(HttpAnswers("127.0.0.1", port_, 2000, "/livez")) << "404 is not alive for a path";
  EXPECT_TRUE(HttpAnswers("127.0.0.1", port_, 2000)) << "any status line to / will do";
  server_.stop();
  thread_.join();
  thread_ = std::thread([] {});
  EXPECT_FALSE(HttpAnswers("127.0.0.1", port_, 500, "/readyz")) << "nothing listens";
}

}  // namespace
}  // namespace hpc::runtime::local
