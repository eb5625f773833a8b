// The agent serves each kind of relayed request from its table: a request is decoded by its
// kind's decoder before anything runs, and what the agent cannot serve is answered with why,
// never dropped (the server's caller would wait for nothing).
#include <gtest/gtest.h>

#include "agent/agent.h"
#include "fakes/fake_data_plane.h"

namespace hpc::cp {
namespace {
using nlohmann::json;

class AgentRelayTest : public ::testing::Test {
 protected:
  std::string ErrorOf(const json& request) {
    const json answer = agent_.HandleRelayed(request);
    EXPECT_TRUE(answer.contains("error")) << answer.dump();
    return answer.value("error", json::object()).value("message", "");
  }
  fakes::FakeDataPlane dp_;
  static AgentOptions Options() {
    AgentOptions o;
    o.server = "http://127.0.0.1:9";  // never contacted: HandleRelayed answers in the calling thread
    o.token = "t";
    o.cursor_file = "/nonexistent";
    return o;
  }
  Agent agent_{&dp_, Options()};
};

TEST_F(AgentRelayTest, AnUnknownKindIsAnsweredNamingIt) {
  EXPECT_NE(ErrorOf({{"kind", "format-disks"}, {"id", "1"}}).find("\"format-disks\""), std::string::npos);
  EXPECT_NE(ErrorOf({{"id", "1"}}).find("is not a kind of request"), std::string::npos);
}

TEST_F(AgentRelayTest, EveryKindOfTheMessagesHasAHandler) {
  for (RelayKind k : kRelayKinds) {
    const std::string error = ErrorOf({{"kind", RelayKindName(k)}});  // decodes to nothing runnable
    EXPECT_EQ(error.find("older one"), std::string::npos) << RelayKindName(k) << ": " << error;
  }
}

TEST_F(AgentRelayTest, AMalformedRequestIsAnsweredWithTheFieldAndRunsNothing) {
  EXPECT_NE(ErrorOf(json{{"kind", "terminal-open"}, {"cols", "wide"}}).find("cols"), std::string::npos);
  EXPECT_NE(ErrorOf(json{{"kind", "job-output"}, {"jobId", -1}}).find("jobId"), std::string::npos);
  EXPECT_TRUE(dp_.commands.empty()) << "nothing ran on the data plane";
}

TEST_F(AgentRelayTest, EachKindReachesItsHandler) {
  // No workspace here: every handler that needs one says so in its own words.
  EXPECT_NE(ErrorOf(ToJson(TerminalOpen{std::string(32, 'a'), "ann-astro", "ann"})).find("not a Ready workspace"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithTunnel(ToJson(TerminalSocket{"", "ann-astro", "ann"}), std::string(32, 'b')))
                .find("not a Ready workspace"),
            std::string::npos);
  const std::string target = LabBasePath("astro", "ann-astro");
  EXPECT_NE(ErrorOf(ToJson(LabHttp{.workspace = "ann-astro",
                                   .project = "astro",
                                   .user = "ann",
                                   .target = target,
                                   .method = "GET",
                                   .headers = {},
                                   .body = ""}))
                .find("not a Ready workspace"),
            std::string::npos);
  EXPECT_NE(ErrorOf(WithTunnel(ToJson(LabSocket{"", "ann-astro", "astro", "ann", target}), std::string(32, 'c')))
                .find("not a Ready workspace"),
            std::string::npos);
  // job-output asks Slurm where the job's files are.
  dp_.controller = [](const std::vector<std::string>&) -> Result<std::string> { return std::string(); };
  (void)agent_.HandleRelayed(ToJson(JobOutputRequest{42, 1700000000, "ann", "c1"}));
  ASSERT_FALSE(dp_.commands.empty());
  EXPECT_EQ(dp_.commands.front().front(), "scontrol");
}

}  // namespace
}  // namespace hpc::cp
