// What pods/exec's status channel says, and the exec URL: the parts of the WebSocket exec that
// need no server (tests/kubernetes/runtime_test.cc runs it through the test API server).
#include "runtime/kubernetes/exec_stream.h"

#include <gtest/gtest.h>

namespace hpc::runtime::kubernetes {
namespace {

TEST(ExecStreamTest, SuccessIsExitCodeZero) {
  auto code = ExitCodeFromExecStatus(R"({"metadata":{},"status":"Success"})");
  ASSERT_TRUE(code.ok());
  EXPECT_EQ(*code, 0);
}

TEST(ExecStreamTest, NonZeroExitCodeCarriesTheCode) {
  auto code = ExitCodeFromExecStatus(
      R"({"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: exit status 42",)"
      R"("reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"42"}]}})");
  ASSERT_TRUE(code.ok()) << code.status().message();
  EXPECT_EQ(*code, 42);
}

TEST(ExecStreamTest, AFailureWithoutAnExitCodeIsAnError) {
  // The container runtime could not start the command: no exit code to report.
  auto code = ExitCodeFromExecStatus(
      R"({"metadata":{},"status":"Failure","reason":"InternalError","message":"executable file not found"})");
  ASSERT_FALSE(code.ok());
  EXPECT_NE(code.status().message().find("executable file not found"), std::string::npos);
  EXPECT_FALSE(ExitCodeFromExecStatus("not json").ok());
  EXPECT_FALSE(ExitCodeFromExecStatus(R"({"status":"Failure","reason":"NonZeroExitCode","details":{"causes":[)"
                                      R"({"reason":"ExitCode","message":"-1; rm"}]}})")
                   .ok());
}

TEST(ExecStreamTest, ThePathEscapesEveryArgumentAndAsksForStdinOnlyWithInput) {
  PodExecRequest r;
  r.namespace_name = "slurm";
  r.pod = "research-controller";
  r.container = "controller";
  r.argv = {"sh", "-c", "echo a&b=c; exit 3"};
  EXPECT_EQ(PodExecPath(r),
            "/api/v1/namespaces/slurm/pods/research-controller/exec?container=controller&stdout=true&stderr=true"
            "&command=sh&command=-c&command=echo%20a%26b%3Dc%3B%20exit%203");
  r.stdin_data = "x";
  EXPECT_NE(PodExecPath(r).find("&stdin=true"), std::string::npos);
}

TEST(ExecStreamTest, AnAttachedTerminalAsksForStdinAndATtyAndNoSeparateStderr) {
  PodExecRequest r;
  r.namespace_name = "slurm";
  r.pod = "kube-ws-login";
  r.container = "workspace-login";
  r.argv = {"bash", "-i"};
  r.stdin = true;
  r.tty = true;
  EXPECT_EQ(PodExecPath(r),
            "/api/v1/namespaces/slurm/pods/kube-ws-login/exec?container=workspace-login&stdout=true&tty=true"
            "&stdin=true&command=bash&command=-i");
}

TEST(ExecStreamTest, AnAttachedCommandThatCannotReachTheApiSaysSo) {
  Connection c;
  c.server = "https://127.0.0.1:1";  // nothing listens on port 1
  ApiClient api(c);
  PodExecRequest r;
  r.namespace_name = "slurm", r.pod = "p", r.container = "c", r.argv = {"true"};
  auto code = ExecAttached(api, r, /*in_fd=*/0, /*out_fd=*/1);
  ASSERT_FALSE(code.ok());
  EXPECT_NE(code.status().message().find("exec:"), std::string::npos) << code.status().message();
  r.argv.clear();
  EXPECT_FALSE(ExecAttached(api, r, 0, 1).ok());
}

}  // namespace
}  // namespace hpc::runtime::kubernetes
