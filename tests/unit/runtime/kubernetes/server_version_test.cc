// The operator's check of the API server's version at start.
#include "runtime/kubernetes/server_version.h"

#include <gtest/gtest.h>

namespace hpc::runtime::kubernetes {
namespace {

TEST(ServerVersion, AcceptsThirtyAndLaterWithADistributionsPlus) {
  EXPECT_TRUE(CheckServerVersion({{"major", "1"}, {"minor", "30"}}).ok());
  EXPECT_TRUE(CheckServerVersion({{"major", "1"}, {"minor", "34+"}, {"gitVersion", "v1.34.4-eks"}}).ok());
  EXPECT_TRUE(CheckServerVersion({{"major", "2"}, {"minor", "0"}}).ok());
}

TEST(ServerVersion, RefusesOlderNamingBothVersionsAndWhy) {
  Status s = CheckServerVersion({{"major", "1"}, {"minor", "29"}, {"gitVersion", "v1.29.8"}});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("v1.29.8"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("1.30 or later"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("sidecars"), std::string::npos) << s.message();
}

TEST(ServerVersion, AnAnswerWithoutVersionsIsAnError) {
  EXPECT_FALSE(CheckServerVersion({{"major", ""}, {"minor", ""}}).ok());
  EXPECT_FALSE(CheckServerVersion(nlohmann::json::array()).ok());
}

}  // namespace
}  // namespace hpc::runtime::kubernetes
