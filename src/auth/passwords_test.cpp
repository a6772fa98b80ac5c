#include "auth/passwords.h"

#include <gtest/gtest.h>
#include <sodium.h>

#include <string>

namespace ty::auth {
namespace {

// Argon2id at its cheapest: the tests check behaviour, not cost.
const PasswordParams kFast = PasswordParams::minimal();

TEST(PasswordsTest, HashVerifiesOnlyTheSamePassword) {
  Result<std::string> hash = hashPassword("correct horse", kFast);
  ASSERT_TRUE(hash.isOk()) << hash.status().toString();
  EXPECT_TRUE(hash->starts_with("$argon2id$")) << *hash;
  EXPECT_TRUE(verifyPassword(*hash, "correct horse"));
  EXPECT_FALSE(verifyPassword(*hash, "correct horsE"));
  EXPECT_FALSE(verifyPassword(*hash, "correct horse "));
  EXPECT_FALSE(verifyPassword(*hash, ""));
}

TEST(PasswordsTest, SaltMakesEachHashDifferent) {
  Result<std::string> a = hashPassword("same", kFast);
  Result<std::string> b = hashPassword("same", kFast);
  ASSERT_TRUE(a.isOk() && b.isOk());
  EXPECT_NE(*a, *b);
  EXPECT_TRUE(verifyPassword(*a, "same"));
  EXPECT_TRUE(verifyPassword(*b, "same"));
}

TEST(PasswordsTest, RejectsEmptyAndOverLongPasswords) {
  Result<std::string> empty = hashPassword("", kFast);
  ASSERT_FALSE(empty.isOk());
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(empty.status().field(), "password");

  Result<std::string> longer = hashPassword(std::string(kMaxPasswordBytes + 1, 'x'), kFast);
  ASSERT_FALSE(longer.isOk());
  EXPECT_EQ(longer.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(longer.status().field(), "password");

  std::string longest(kMaxPasswordBytes, 'x');
  Result<std::string> ok = hashPassword(longest, kFast);
  ASSERT_TRUE(ok.isOk()) << ok.status().toString();
  EXPECT_TRUE(verifyPassword(*ok, longest));
  EXPECT_FALSE(verifyPassword(*ok, longest + "x"));
}

TEST(PasswordsTest, AcceptsArbitraryBytes) {
  std::string plain("p\0ss\xff\xfe word", 12);
  Result<std::string> hash = hashPassword(plain, kFast);
  ASSERT_TRUE(hash.isOk());
  EXPECT_TRUE(verifyPassword(*hash, plain));
  EXPECT_FALSE(verifyPassword(*hash, "p"));  // not cut at the NUL
}

TEST(PasswordsTest, MalformedHashNeverVerifies) {
  EXPECT_FALSE(verifyPassword("", "pw"));
  EXPECT_FALSE(verifyPassword("not a hash", "pw"));
  EXPECT_FALSE(verifyPassword("$argon2id$v=19$m=8,t=1,p=1$AAAA$AAAA", "pw"));
  EXPECT_FALSE(verifyPassword(std::string(4096, '$'), "pw"));
}

TEST(PasswordsTest, NeedsRehashWhenParametersChange) {
  Result<std::string> hash = hashPassword("pw", kFast);
  ASSERT_TRUE(hash.isOk());
  EXPECT_FALSE(needsRehash(*hash, kFast));
  EXPECT_TRUE(needsRehash(*hash, PasswordParams::interactive()));
  EXPECT_TRUE(needsRehash("", kFast));
  EXPECT_TRUE(needsRehash("garbage", kFast));
}

TEST(PasswordsTest, OlderArgon2iHashVerifiesButNeedsRehash) {
  ensureSodium();
  char out[crypto_pwhash_STRBYTES];
  ASSERT_EQ(crypto_pwhash_str_alg(out, "pw", 2, crypto_pwhash_argon2i_OPSLIMIT_MIN,
                                  crypto_pwhash_MEMLIMIT_MIN, crypto_pwhash_ALG_ARGON2I13),
            0);
  std::string hash(out);
  EXPECT_TRUE(verifyPassword(hash, "pw"));
  EXPECT_TRUE(needsRehash(hash, {crypto_pwhash_argon2i_OPSLIMIT_MIN, crypto_pwhash_MEMLIMIT_MIN}));
}

TEST(PasswordsTest, DefaultsAreInteractiveArgon2id) {
  PasswordParams p = PasswordParams::interactive();
  EXPECT_EQ(p.ops_limit, crypto_pwhash_OPSLIMIT_INTERACTIVE);
  EXPECT_EQ(p.mem_limit, crypto_pwhash_MEMLIMIT_INTERACTIVE);
  // One real-cost hash, so the default path is exercised end to end.
  Result<std::string> hash = hashPassword("pw");
  ASSERT_TRUE(hash.isOk()) << hash.status().toString();
  EXPECT_NE(hash->find("$m=65536,t=2,p=1$"), std::string::npos) << *hash;
  EXPECT_FALSE(needsRehash(*hash));
  EXPECT_TRUE(verifyPassword(*hash, "pw"));
}

TEST(PasswordsTest, EnsureSodiumIsIdempotent) {
  ensureSodium();
  ensureSodium();
  EXPECT_EQ(sodium_init(), 1);  // 1: already initialised
}

}  // namespace
}  // namespace ty::auth
