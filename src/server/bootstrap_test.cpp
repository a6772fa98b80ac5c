#include "server/bootstrap.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "auth/tokens.h"

namespace ty {
namespace {

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ty-bootstrap-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string read(const std::string& name) {
    std::ifstream in(dir_ / name);
    std::string line;
    std::getline(in, line);
    return line;
  }
  bool live(const std::string& token) {
    return store_->findTokenByHash(auth::tokenHash(token), 100).value().has_value();
  }

  std::filesystem::path dir_;
  std::unique_ptr<Store> store_ = newMemoryStore();
};

TEST_F(BootstrapTest, FirstStartMakesAnAdminAndWritesItsTokenOnce) {
  auto first = bootstrapAdmin(*store_, 100, dir_, "", {"nlp"});
  ASSERT_TRUE(first.isOk()) << first.status().toString();
  ASSERT_TRUE(auth::looksLikeToken(first->new_token));
  EXPECT_EQ(read("admin.token"), first->new_token);
  struct stat st {};
  ASSERT_EQ(::stat((dir_ / "admin.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  User admin = store_->getUser("admin").value();
  EXPECT_TRUE(admin.is_admin);
  EXPECT_TRUE(admin.password_hash.empty());  // no default password
  EXPECT_TRUE(live(first->new_token));
  EXPECT_TRUE(store_->getProject("default").isOk());
  EXPECT_TRUE(store_->getProject("nlp").isOk());

  // A later start prints nothing and keeps the token.
  auto second = bootstrapAdmin(*store_, 200, dir_, "", {"nlp"});
  ASSERT_TRUE(second.isOk());
  EXPECT_TRUE(second->new_token.empty());
  EXPECT_EQ(store_->listUsers().value().size(), 1u);
  EXPECT_EQ(store_->tokensOfUser("admin").value().size(), 1u);
}

TEST_F(BootstrapTest, GivenTokenFileIsUsedAndNeverPrinted) {
  std::string token = auth::newToken();
  std::ofstream(dir_ / "given") << token << "\n";
  auto out = bootstrapAdmin(*store_, 100, dir_, dir_ / "given");
  ASSERT_TRUE(out.isOk());
  EXPECT_TRUE(out->new_token.empty());
  EXPECT_TRUE(live(token));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "admin.token"));
}

TEST_F(BootstrapTest, RevokedBootstrapTokenStaysRevoked) {
  std::string token = auth::newToken();
  std::ofstream(dir_ / "given") << token << "\n";
  ASSERT_TRUE(bootstrapAdmin(*store_, 100, dir_, dir_ / "given").isOk());
  std::int64_t id = store_->tokensOfUser("admin").value().at(0).id;
  ASSERT_TRUE(store_->revokeToken("admin", id, 150).isOk());
  ASSERT_TRUE(bootstrapAdmin(*store_, 200, dir_, dir_ / "given").isOk());
  EXPECT_FALSE(live(token));
}

TEST_F(BootstrapTest, HalfFinishedFirstStartIsCompletedWithTheWrittenToken) {
  // The token file was written, then the process died before the store
  // held the admin: the next start stores that same token.
  std::string token = auth::newToken();
  std::ofstream(dir_ / "admin.token") << token << "\n";
  auto out = bootstrapAdmin(*store_, 100, dir_, "");
  ASSERT_TRUE(out.isOk());
  EXPECT_EQ(out->new_token, token);
  EXPECT_TRUE(live(token));
}

TEST_F(BootstrapTest, TokenFileWithoutATokenIsRefused) {
  std::ofstream(dir_ / "given") << "password123\n";
  auto out = bootstrapAdmin(*store_, 100, dir_, dir_ / "given");
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(out.status().field(), "--bootstrap-token-file");
  EXPECT_EQ(out.status().message().find("password123"), std::string::npos);
  EXPECT_TRUE(store_->listUsers().value().empty());
}

}  // namespace
}  // namespace ty
