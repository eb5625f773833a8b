// The CLI's exit codes follow the status code of the failure, and API errors keep the code the
// server gave them, so scripts tell "fix the input" from "retry later" without parsing messages.
#include <gtest/gtest.h>

#include "cli/api_client.h"
#include "cli/support.h"

namespace hpc::cli {
namespace {

TEST(ExitCodes, FollowTheStatusCode) {
  EXPECT_EQ(ExitCodeFor(StatusCode::kOk), 0);
  EXPECT_EQ(ExitCodeFor(StatusCode::kInvalidArgument), kExitFailed);
  EXPECT_EQ(ExitCodeFor(StatusCode::kNotFound), kExitFailed);
  EXPECT_EQ(ExitCodeFor(StatusCode::kConflict), kExitFailed);
  EXPECT_EQ(ExitCodeFor(StatusCode::kUnknown), kExitFailed);
  EXPECT_EQ(ExitCodeFor(StatusCode::kUnavailable), kExitUnavailable);
  EXPECT_EQ(ExitCodeFor(StatusCode::kUnauthenticated), kExitNoPermission);
  EXPECT_EQ(ExitCodeFor(StatusCode::kPermissionDenied), kExitNoPermission);
  EXPECT_EQ(ExitCodeFor(StatusCode::kInternal), kExitInternal);
  EXPECT_EQ(Fail(Status::Unavailable("slurmctld does not answer")), kExitUnavailable);
}

TEST(ExitCodes, ApiErrorsKeepTheServersClassification) {
  EXPECT_EQ(StatusForHttpError(400, "m").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(StatusForHttpError(401, "m").code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(StatusForHttpError(403, "m").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(StatusForHttpError(404, "m").code(), StatusCode::kNotFound);
  EXPECT_EQ(StatusForHttpError(409, "m").code(), StatusCode::kConflict);
  EXPECT_EQ(StatusForHttpError(429, "m").code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusForHttpError(503, "m").code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusForHttpError(500, "m").code(), StatusCode::kInternal);
  EXPECT_EQ(StatusForHttpError(404, "no project \"x\" (404)").message(), "no project \"x\" (404)");
}

TEST(ExitCodes, AnUnreachableServerIsRetryable) {
  ApiArgs a;
  a.server = "http://127.0.0.1:1";  // nothing listens on port 1 of loopback
  a.token_file = "/dev/null";
  auto r = Call(a, "GET", "/api/v1/flags");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnavailable) << r.status().message();
}

}  // namespace
}  // namespace hpc::cli
