#include "auth/tokens.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ty::auth {
namespace {

TEST(TokensTest, NewTokenHasTheDocumentedShape) {
  std::string t = newToken();
  EXPECT_EQ(t.size(), kTokenLength);
  EXPECT_TRUE(t.starts_with("ty_"));
  EXPECT_EQ(t.find('='), std::string::npos);  // no padding
  EXPECT_TRUE(looksLikeToken(t)) << t;
}

TEST(TokensTest, NewTokensAreDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 200; ++i) seen.insert(newToken());
  EXPECT_EQ(seen.size(), 200u);
}

TEST(TokensTest, LooksLikeToken) {
  std::string body(43, 'A');
  EXPECT_TRUE(looksLikeToken("ty_" + body));
  EXPECT_TRUE(looksLikeToken("ty_" + std::string(42, 'z') + "-"));
  EXPECT_TRUE(looksLikeToken("ty_" + std::string(42, '9') + "_"));
  EXPECT_FALSE(looksLikeToken("ty_" + body.substr(1)));              // short
  EXPECT_FALSE(looksLikeToken("ty_" + body + "A"));                  // long
  EXPECT_FALSE(looksLikeToken("TY_" + body));                        // prefix
  EXPECT_FALSE(looksLikeToken("ty_" + std::string(42, 'A') + "+"));  // not url-safe
  EXPECT_FALSE(looksLikeToken("ty_" + std::string(42, 'A') + "="));
  EXPECT_FALSE(looksLikeToken(""));
}

TEST(TokensTest, TokenHashIsHexSha256) {
  // FIPS 180-2 test vector.
  EXPECT_EQ(tokenHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(tokenHash(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  std::string t = newToken();
  EXPECT_EQ(tokenHash(t), tokenHash(t));
  EXPECT_EQ(tokenHash(t).size(), 64u);
  EXPECT_NE(tokenHash(t), tokenHash(newToken()));
}

TEST(TokensTest, DisplayPrefixIsEightCharactersAfterTyUnderscore) {
  EXPECT_EQ(displayPrefix("ty_abcdefghijklmnop"), "abcdefgh");
  EXPECT_EQ(displayPrefix("ty_abc"), "abc");
  EXPECT_EQ(displayPrefix("xx_abcdefghijk"), "");
  EXPECT_EQ(displayPrefix(""), "");
  std::string t = newToken();
  EXPECT_EQ(displayPrefix(t), t.substr(3, 8));
}

TEST(TokensTest, HashesEqual) {
  std::string h = tokenHash("ty_one");
  EXPECT_TRUE(hashesEqual(h, tokenHash("ty_one")));
  EXPECT_FALSE(hashesEqual(h, tokenHash("ty_two")));
  std::string last_differs = h;
  last_differs.back() = last_differs.back() == '0' ? '1' : '0';
  EXPECT_FALSE(hashesEqual(h, last_differs));
  EXPECT_FALSE(hashesEqual(h, h.substr(0, 63)));
  EXPECT_TRUE(hashesEqual("", ""));
}

struct BearerCase {
  const char* header;
  std::optional<std::string> token;
};

TEST(TokensTest, ParseBearer) {
  const BearerCase cases[] = {
      {"Bearer ty_abc", "ty_abc"},
      {"bearer ty_abc", "ty_abc"},
      {"BEARER ty_abc", "ty_abc"},
      {"BeArEr ty_abc", "ty_abc"},
      {"Bearer    ty_abc   ", "ty_abc"},
      {"  Bearer ty_abc", "ty_abc"},
      {"Bearer\tty_abc", "ty_abc"},
      {"Bearer", std::nullopt},
      {"Bearer ", std::nullopt},
      {"Bearer    ", std::nullopt},
      {"Bearerty_abc", std::nullopt},
      {"Basic dXNlcjpwdw==", std::nullopt},
      {"Token ty_abc", std::nullopt},
      {"Bearer ty_abc extra", std::nullopt},
      {"", std::nullopt},
      {"Bear ty_abc", std::nullopt},
  };
  for (const BearerCase& c : cases) {
    SCOPED_TRACE(std::string("header: '") + c.header + "'");
    EXPECT_EQ(parseBearer(c.header), c.token);
  }
}

}  // namespace
}  // namespace ty::auth
