#include "auth/job_tokens.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "common/temp_dir_test_util.h"

namespace ty::auth {
namespace {

class JobTokensTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_FALSE(dir_.path().empty()); }
  ::ty::testing::TempDir dir_{"ty_jobtok_"};
};

TEST_F(JobTokensTest, IssuedTokenVerifiesToItsAttempt) {
  JobTokens tokens(std::string(32, 'k'));
  AttemptKey key{JobId(42), 3};
  std::string t = tokens.issue(key);
  EXPECT_TRUE(t.starts_with("tyj_42_3_")) << t;
  EXPECT_EQ(t.size(), std::string("tyj_42_3_").size() + 64);
  EXPECT_EQ(tokens.verify(t), key);
  EXPECT_TRUE(JobTokens::looksLikeJobToken(t));
}

TEST_F(JobTokensTest, ForgedOrAlteredTokensFail) {
  JobTokens tokens(std::string(32, 'k'));
  JobTokens other(std::string(32, 'o'));
  std::string t = tokens.issue({JobId(42), 3});
  EXPECT_FALSE(other.verify(t).has_value());
  // Another job or attempt with the same MAC.
  std::string mac = t.substr(t.rfind('_') + 1);
  EXPECT_FALSE(tokens.verify("tyj_43_3_" + mac).has_value());
  EXPECT_FALSE(tokens.verify("tyj_42_4_" + mac).has_value());
  std::string flipped = t;
  flipped.back() = flipped.back() == '0' ? '1' : '0';
  EXPECT_FALSE(tokens.verify(flipped).has_value());
  for (const char* bad : {"", "tyj_", "tyj_42_3", "tyj_42_3_", "tyj_042_3_00", "tyj_-1_3_00",
                          "tyj_a_b_c", "ty_abc"}) {
    EXPECT_FALSE(tokens.verify(bad).has_value()) << bad;
  }
}

TEST_F(JobTokensTest, KeyIsMadeOnceWithMode0600AndReused) {
  const std::string path = (dir_ / "job-token.key").string();
  auto first = JobTokens::loadOrCreate(path);
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  auto second = JobTokens::loadOrCreate(path);
  ASSERT_TRUE(second.isOk());
  std::string t = first->issue({JobId(1), 1});
  EXPECT_EQ(second->verify(t), (AttemptKey{JobId(1), 1}));
  // Only the key file is left behind.
  int files = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir_.fsPath())) ++files;
  EXPECT_EQ(files, 1);
}

TEST_F(JobTokensTest, AFileThatIsNotAKeyIsRefused) {
  const std::string path = (dir_ / "job-token.key").string();
  std::ofstream(path) << "not a key\n";
  auto r = JobTokens::loadOrCreate(path);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace ty::auth
