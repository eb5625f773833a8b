// API tokens on an in-memory store: a creation body is checked field by field, the secret is
// handed out once and only its digest stored, a lifetime sets the expiry, users list and revoke
// only their own tokens (someone else's id is not said to exist), admins any.
#include "server/token_service.h"

#include <gtest/gtest.h>

#include "common/jwt.h"
#include "fakes/fake_controlplane_stores.h"

namespace hpc::cp {
namespace {

using nlohmann::json;

class TokenServiceTest : public ::testing::Test {
 protected:
  Result<TokenService::Created> Create(const json& body) { return service_.Create("root-admin", body); }
  void ExpectRefused(const json& body, const std::string& field) {
    auto t = Create(body);
    ASSERT_FALSE(t.ok()) << body.dump();
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(t.status().field(), field) << t.status().message();
    EXPECT_TRUE(stores_.tokens.empty());
  }

  int64_t now_ = 1'800'000'000;
  int made_ = 0;
  fakes::FakeControlPlaneStores stores_;
  TokenService service_{
      &stores_, TokenService::Options{[this] { return now_; },
                                      [this] { return Result<std::string>("secret-" + std::to_string(++made_)); }}};
  const Principal admin_{"root-admin", Role::kAdmin, {}};
};

TEST_F(TokenServiceTest, TheSecretIsReturnedOnceAndOnlyItsDigestStored) {
  auto t = Create({{"subject", "ann"}, {"role", "user"}, {"projects", {"astro"}}, {"ttl", "12h"}});
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->secret, "secret-1");
  const std::string digest = jwt::Sha256Hex("secret-1");
  EXPECT_EQ(t->info.id, digest.substr(0, 16));
  ASSERT_TRUE(stores_.tokens.count(digest)) << "stored under its digest";
  EXPECT_EQ(stores_.tokens.size(), 1u);
  const TokenInfo& stored = stores_.tokens[digest];
  EXPECT_EQ(stored.principal.subject, "ann");
  EXPECT_EQ(stored.principal.role, Role::kUser);
  EXPECT_EQ(stored.principal.projects, std::vector<std::string>{"astro"});
  EXPECT_EQ(stored.created_by, "root-admin");
  EXPECT_EQ(stored.expires_at, now_ + 12 * 3600);
  EXPECT_EQ(Create({{"subject", "bob"}, {"role", "user"}})->info.expires_at, 0) << "no ttl: never expires";
}

TEST_F(TokenServiceTest, ACreationBodyIsCheckedFieldByField) {
  ExpectRefused({{"subject", 1}, {"role", "user"}}, "subject");
  ExpectRefused({{"subject", "Ann"}, {"role", "user"}}, "subject");
  ExpectRefused({{"subject", "ann"}, {"role", "root"}}, "role");
  ExpectRefused({{"subject", "ann"}, {"role", "user"}, {"projects", "astro"}}, "projects");
  ExpectRefused({{"subject", "ann"}, {"role", "user"}, {"projects", {"Astro"}}}, "projects");
  ExpectRefused({{"subject", "ann"}, {"role", "user"}, {"ttl", "0s"}}, "ttl");
  ExpectRefused({{"subject", "ann"}, {"role", "user"}, {"ttl", "3651d"}}, "ttl");
  ExpectRefused({{"subject", "ann"}, {"role", "user"}, {"ttl", -5}}, "ttl");
}

TEST_F(TokenServiceTest, UsersListAndRevokeTheirOwnAdminsAny) {
  auto ann = Create({{"subject", "ann"}, {"role", "user"}});
  auto bob = Create({{"subject", "bob"}, {"role", "user"}});
  ASSERT_TRUE(ann.ok() && bob.ok());
  const Principal ann_p{"ann", Role::kUser, {}};
  auto listed = service_.List(ann_p);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_EQ((*listed)[0].principal.subject, "ann");
  EXPECT_EQ(service_.List(admin_)->size(), 2u);
  EXPECT_EQ(service_.Revoke(ann_p, bob->info.id).code(), StatusCode::kNotFound) << "not ann's";
  EXPECT_EQ(stores_.tokens[jwt::Sha256Hex(bob->secret)].revoked_at, 0) << "bob's token untouched";
  EXPECT_TRUE(service_.Revoke(ann_p, ann->info.id).ok());
  EXPECT_EQ(stores_.tokens[jwt::Sha256Hex(ann->secret)].revoked_at, now_);
  EXPECT_TRUE(service_.Revoke(admin_, bob->info.id).ok());
  EXPECT_EQ(service_.Revoke(admin_, "0123456789abcdef").code(), StatusCode::kNotFound);
}

TEST_F(TokenServiceTest, AStoreThatDoesNotAnswerIsUnavailable) {
  stores_.unavailable = true;
  EXPECT_EQ(Create({{"subject", "ann"}, {"role", "user"}}).status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(service_.List(admin_).status().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace hpc::cp
