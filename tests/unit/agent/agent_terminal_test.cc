// The agent's terminal output is not lost when one post fails (agent_terminal.h): seen in CI, a
// kept-alive connection the server closed just as the next post went out lost a job's output.
#include "agent/agent_terminal.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <thread>

namespace hpc::cp {
namespace {

class FlakyServer {
 public:
  // Answers `failures` requests with `status`, then 200; keeps every body it accepted.
  FlakyServer(int failures, int status) : failures_(failures), status_(status) {
    server_.Post("/out", [this](const httplib::Request& req, httplib::Response& res) {
      if (calls_++ < failures_) {
        res.status = status_;
        return;
      }
      accepted_.push_back(req.body);
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~FlakyServer() {
    server_.stop();
    thread_.join();
  }
  TerminalEndpoint Endpoint() const { return {"http://127.0.0.1:" + std::to_string(port_), "t", "", "dp1"}; }
  int calls() const { return calls_; }
  const std::vector<std::string>& accepted() const { return accepted_; }

 private:
  int failures_, status_;
  std::atomic<int> calls_{0};
  std::vector<std::string> accepted_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

TEST(AgentTerminal, AFailedOutputPostIsSentAgainOnAFreshConnection) {
  FlakyServer server(2, 503);
  auto client = TerminalClient(server.Endpoint(), 5);
  EXPECT_EQ(PostTerminalOutput(server.Endpoint(), client, "/out", "piece"), 200);
  EXPECT_EQ(server.calls(), 3);
  EXPECT_EQ(server.accepted(), std::vector<std::string>{"piece"}) << "delivered once, not lost and not twice";
}

TEST(AgentTerminal, ASessionGoneIsAnAnswerNotAFailure) {
  FlakyServer server(1, 404);
  auto client = TerminalClient(server.Endpoint(), 5);
  EXPECT_EQ(PostTerminalOutput(server.Endpoint(), client, "/out", "piece"), 404);
  EXPECT_EQ(server.calls(), 1) << "no retry: the shell is ended instead";
}

TEST(AgentTerminal, AControlPlaneThatNeverAnswersEndsAfterBoundedTries) {
  TerminalEndpoint nowhere{"http://127.0.0.1:1", "t", "", "dp1"};  // nothing listens on port 1
  auto client = TerminalClient(nowhere, 1);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(PostTerminalOutput(nowhere, client, "/out", "piece", 3), 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

}  // namespace
}  // namespace hpc::cp
