// Status carries a code and, for invalid input, the field: callers branch on them, never on
// the message.
#include "common/result.h"

#include <gtest/gtest.h>

namespace hpc {
namespace {

TEST(StatusTest, CodesAndFieldsSurviveContext) {
  EXPECT_TRUE(Status::Ok().ok());
  EXPECT_EQ(Status::Ok().code(), StatusCode::kOk);
  Status unknown = Status::Errorf("boom {}", 1);
  EXPECT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.code(), StatusCode::kUnknown);
  EXPECT_FALSE(Status::Error("").ok());  // an error without words is still an error

  Status bad = Status::InvalidArgument("spec.replicas", "must be >= 0");
  EXPECT_EQ(bad.message(), "spec.replicas: must be >= 0");
  EXPECT_EQ(bad.field(), "spec.replicas");
  Status outer = bad.WithContext("nodeset \"gpu\"");
  EXPECT_EQ(outer.message(), "nodeset \"gpu\": spec.replicas: must be >= 0");
  EXPECT_EQ(outer.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(outer.field(), "spec.replicas");

  EXPECT_EQ(bad.InField("items[2]").field(), "items[2].spec.replicas");
  EXPECT_EQ(Status::InvalidArgument("", "must be an object").InField("jobs[0]").message(),
            "jobs[0]: must be an object");
  EXPECT_EQ(Status::Unavailable("store").InField("x").message(), "store");  // only invalid input has a field

  EXPECT_STREQ(StatusCodeName(Status::FailedPrecondition("later").code()), "FailedPrecondition");
  Result<int> r = Status::NotFound("no such job");
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace hpc
