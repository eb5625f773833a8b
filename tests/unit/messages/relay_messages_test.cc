// The relayed requests between the control plane's server and a data plane's agent: every kind
// is encoded and decoded by one pair of functions, so what the server sends is what the agent
// reads; an unknown kind is refused naming it.
#include "messages/relay_messages.h"

#include <gtest/gtest.h>

namespace hpc::cp {
namespace {
using nlohmann::json;

TEST(RelayMessages, EveryKindHasOneNameThatReadsBackAsItself) {
  for (RelayKind k : kRelayKinds) {
    auto back = RelayKindOf(json{{"kind", RelayKindName(k)}});
    ASSERT_TRUE(back.ok()) << RelayKindName(k);
    EXPECT_EQ(*back, k);
  }
}

TEST(RelayMessages, AnUnknownKindIsRefusedNamingIt) {
  auto unknown = RelayKindOf(json{{"kind", "reboot-everything"}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().field(), "kind");
  EXPECT_NE(unknown.status().message().find("\"reboot-everything\""), std::string::npos) << unknown.status().message();
  EXPECT_FALSE(RelayKindOf(json{{"kind", 7}}).ok());
  EXPECT_FALSE(RelayKindOf(json::array()).ok());
  // A long name is cut, so a hostile one cannot flood a log or an answer.
  auto huge = RelayKindOf(json{{"kind", std::string(10000, 'x')}});
  ASSERT_FALSE(huge.ok());
  EXPECT_LT(huge.status().message().size(), 200u);
}

TEST(RelayMessages, EachKindRoundTrips) {
  JobOutputRequest out{42, 1700000000, "ann", "c1", "stderr", 128, 4096};
  auto out_back = JobOutputRequestFromJson(ToJson(out));
  ASSERT_TRUE(out_back.ok()) << out_back.status().message();
  EXPECT_EQ(out_back->job_id, 42);
  EXPECT_EQ(out_back->submit_time, 1700000000);
  EXPECT_EQ(out_back->user, "ann");
  EXPECT_EQ(out_back->cluster, "c1");
  EXPECT_EQ(out_back->stream, "stderr");
  EXPECT_EQ(out_back->offset, 128);
  EXPECT_EQ(out_back->limit, 4096);
  EXPECT_EQ(*RelayKindOf(ToJson(out)), RelayKind::kJobOutput);

  TerminalOpen open{std::string(32, 'a'), "ann-astro", "ann", 120, 40};
  auto open_back = TerminalOpenFromJson(ToJson(open));
  ASSERT_TRUE(open_back.ok());
  EXPECT_EQ(open_back->session, open.session);
  EXPECT_EQ(open_back->workspace, "ann-astro");
  EXPECT_EQ(open_back->user, "ann");
  EXPECT_EQ(open_back->cols, 120);
  EXPECT_EQ(open_back->rows, 40);
  EXPECT_EQ(*RelayKindOf(ToJson(open)), RelayKind::kTerminalOpen);

  TerminalSocket socket{"", "ann-astro", "ann", 100, 30};
  const std::string tunnel(32, 'b');
  auto socket_back = TerminalSocketFromJson(WithTunnel(ToJson(socket), tunnel));
  ASSERT_TRUE(socket_back.ok());
  EXPECT_EQ(socket_back->tunnel, tunnel) << "the server adds the tunnel it opened";
  EXPECT_EQ(socket_back->workspace, "ann-astro");
  EXPECT_EQ(socket_back->cols, 100);
  EXPECT_EQ(socket_back->rows, 30);
  EXPECT_EQ(*RelayKindOf(ToJson(socket)), RelayKind::kTerminalSocket);

  const std::string target = LabBasePath("astro", "ann-astro") + "api/kernels?x=1";
  LabHttp http{"ann-astro",
               "astro",
               "ann",
               target,
               "POST",
               {{"Content-Type", "application/json"}},
               std::string("\0\x01\xff"
                           "bytes",
                           8)};
  auto http_back = LabHttpFromJson(ToJson(http));
  ASSERT_TRUE(http_back.ok()) << http_back.status().message();
  EXPECT_EQ(http_back->target, target);
  EXPECT_EQ(http_back->project, "astro");
  EXPECT_EQ(http_back->method, "POST");
  EXPECT_EQ(http_back->headers, http.headers);
  EXPECT_EQ(http_back->body, http.body) << "bytes travel unchanged (base64 on the wire)";
  EXPECT_EQ(*RelayKindOf(ToJson(http)), RelayKind::kLabHttp);

  LabHttpAnswer answer{201, {{"Content-Type", "text/plain"}}, std::string("\0ok", 3)};
  auto answer_back = LabHttpAnswerFromJson(ToJson(answer));
  ASSERT_TRUE(answer_back.ok());
  EXPECT_EQ(answer_back->status, 201);
  EXPECT_EQ(answer_back->headers, answer.headers);
  EXPECT_EQ(answer_back->body, answer.body);

  LabSocket lab_socket{"", "ann-astro", "astro", "ann", LabBasePath("astro", "ann-astro") + "api/kernels/1/channels"};
  auto lab_socket_back = LabSocketFromJson(WithTunnel(ToJson(lab_socket), tunnel));
  ASSERT_TRUE(lab_socket_back.ok());
  EXPECT_EQ(lab_socket_back->tunnel, tunnel);
  EXPECT_EQ(lab_socket_back->target, lab_socket.target);
  EXPECT_EQ(*RelayKindOf(ToJson(lab_socket)), RelayKind::kLabSocket);
}

TEST(RelayMessages, AFieldOfTheWrongTypeIsRefusedNamingIt) {
  auto cols = TerminalOpenFromJson({{"kind", "terminal-open"}, {"cols", "wide"}});
  ASSERT_FALSE(cols.ok());
  EXPECT_EQ(cols.status().field(), "cols");
  auto user = LabSocketFromJson({{"kind", "lab-socket"}, {"user", 3}});
  ASSERT_FALSE(user.ok());
  EXPECT_EQ(user.status().field(), "user");
  auto header = LabHttpFromJson({{"kind", "lab-http"}, {"headers", {{"Accept", 1}}}});
  ASSERT_FALSE(header.ok());
  EXPECT_EQ(header.status().field(), "headers.Accept");
  auto body = LabHttpFromJson({{"kind", "lab-http"}, {"body", "not base64!"}});
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().field(), "body");
  EXPECT_FALSE(TerminalSocketFromJson(json::array()).ok());
}

TEST(RelayMessages, TerminalSizesAreClampedAndDefaulted) {
  auto tiny = TerminalOpenFromJson({{"cols", 0}, {"rows", 100000}});
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->cols, 2);
  EXPECT_EQ(tiny->rows, 1000);
  auto none = TerminalSocketFromJson(json::object());
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->cols, 80);
  EXPECT_EQ(none->rows, 24);
}

TEST(RelayMessages, AResizeIsReadOnlyWhenBothSizesAreIntegers) {
  auto size = TerminalResizeFromJson({{"resize", {{"cols", 132}, {"rows", 5000}}}});
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(size->cols, 132);
  EXPECT_EQ(size->rows, 1000);
  // What a hostile server could send instead: nothing is resized, and nothing throws.
  for (const json& bad : {json{{"resize", {{"cols", "wide"}, {"rows", 24}}}}, json{{"resize", {{"cols", 80}}}},
                          json{{"resize", 3}}, json{{"data", "ls"}}, json::array(), json("resize")}) {
    EXPECT_FALSE(TerminalResizeFromJson(bad).has_value()) << bad.dump();
  }
}

TEST(RelayMessages, AMalformedJupyterLabAnswerIsTheAgentsFault) {
  for (const json& bad :
       {json{{"status", 99}, {"headers", json::object()}, {"body", ""}}, json{{"status", 200}, {"body", ""}},
        json{{"status", 200}, {"headers", json::object()}, {"body", "%%"}},
        json{{"status", "200"}, {"headers", json::object()}, {"body", ""}}}) {
    auto a = LabHttpAnswerFromJson(bad);
    ASSERT_FALSE(a.ok()) << bad.dump();
    EXPECT_EQ(a.status().code(), StatusCode::kUnavailable) << bad.dump();
  }
}

TEST(RelayMessages, ErrorsKeepTheirCodeAcrossTheRelay) {
  EXPECT_EQ(RelayAnswerError(RelayError(Status::NotFound("gone")), "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(RelayAnswerError(RelayError(Status::FailedPrecondition("no")), "x").code(),
            StatusCode::kFailedPrecondition);
  EXPECT_EQ(RelayAnswerError(RelayError(Status::PermissionDenied("no")), "x").code(), StatusCode::kUnavailable)
      << "only the three codes an agent may answer";
  EXPECT_EQ(RelayAnswerError(RelayError(Status::NotFound("gone")), "x").message(), "gone");
  EXPECT_TRUE(RelayAnswerError(json{{"started", true}}, "x").ok());
  EXPECT_EQ(RelayAnswerError(json::array(), "x").code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hpc::cp
