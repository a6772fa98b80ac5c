#include "cli/credentials.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "auth/tokens.h"
#include "cli/saved_env_test_util.h"
#include "common/temp_dir_test_util.h"

namespace ty {
namespace {

namespace fs = std::filesystem;

mode_t modeOf(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::stat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

std::string contentOf(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Each test gets an empty home directory and no Trainyard variables; the
// previous environment comes back afterwards.
class CredentialsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(root_.path().empty());
    ::setenv("HOME", (root_ / "home").c_str(), 1);
  }

  ::ty::testing::TempDir root_{"ty-cred-"};
  // The variables the CLI reads: unset for the test, restored after it.
  test::SavedEnv env_{"HOME", "XDG_CONFIG_HOME", kTokenEnv, kServerEnv, kCaCertEnv};
};

TEST_F(CredentialsTest, HomeConfigWhenXdgIsUnset) {
  auto store = CredentialStore::forCurrentUser();
  ASSERT_TRUE(store.isOk());
  EXPECT_EQ(store->tokenPath(), root_ / "home" / ".config" / "trainyard" / "token");
}

TEST_F(CredentialsTest, XdgConfigHomeWinsOverHome) {
  ::setenv("XDG_CONFIG_HOME", (root_ / "xdg").c_str(), 1);
  auto store = CredentialStore::forCurrentUser();
  ASSERT_TRUE(store.isOk());
  EXPECT_EQ(store->tokenPath(), root_ / "xdg" / "trainyard" / "token");
}

TEST_F(CredentialsTest, RelativeXdgConfigHomeIsIgnored) {
  // The XDG base directory spec says relative paths are invalid.
  ::setenv("XDG_CONFIG_HOME", "relative/dir", 1);
  auto store = CredentialStore::forCurrentUser();
  ASSERT_TRUE(store.isOk());
  EXPECT_EQ(store->dir(), root_ / "home" / ".config" / "trainyard");
}

TEST_F(CredentialsTest, NoHomeAndNoXdgIsAnError) {
  ::unsetenv("HOME");
  EXPECT_FALSE(CredentialStore::forCurrentUser().isOk());
}

TEST_F(CredentialsTest, SavedTokenIsMode0600InADirectoryOf0700WhateverTheUmask) {
  mode_t old = ::umask(0);  // the most permissive umask must not leak into the modes
  CredentialStore store(root_ / "cfg" / "trainyard");
  std::string token = auth::newToken();
  Status st = store.saveToken(token);
  ::umask(old);
  ASSERT_TRUE(st.isOk()) << st.toString();
  EXPECT_EQ(modeOf(store.tokenPath()), 0600u);
  EXPECT_EQ(modeOf(store.dir()), 0700u);
  EXPECT_EQ(modeOf(root_ / "cfg"), 0700u);
  auto read = store.readToken();
  ASSERT_TRUE(read.isOk()) << read.status().toString();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(**read, token);
}

TEST_F(CredentialsTest, MissingTokenFileIsNoToken) {
  CredentialStore store(root_ / "none");
  auto read = store.readToken();
  ASSERT_TRUE(read.isOk());
  EXPECT_FALSE(read->has_value());
  EXPECT_TRUE(store.removeToken().isOk());
}

TEST_F(CredentialsTest, RefusesATokenFileOthersCanRead) {
  CredentialStore store(root_ / "cfg");
  std::string token = auth::newToken();
  ASSERT_TRUE(store.saveToken(token).isOk());
  ASSERT_EQ(::chmod(store.tokenPath().c_str(), 0644), 0);
  auto read = store.readToken();
  ASSERT_FALSE(read.isOk());
  EXPECT_EQ(read.status().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(read.status().message().find("0644"), std::string::npos);
  EXPECT_NE(read.status().message().find("chmod 600"), std::string::npos);
  EXPECT_EQ(read.status().message().find(token), std::string::npos);

  ASSERT_EQ(::chmod(store.tokenPath().c_str(), 0640), 0);
  EXPECT_FALSE(store.readToken().isOk());
  ASSERT_EQ(::chmod(store.tokenPath().c_str(), 0400), 0);
  EXPECT_TRUE(store.readToken().isOk());
}

TEST_F(CredentialsTest, SavingReplacesTheFileAtomically) {
  CredentialStore store(root_ / "cfg");
  std::string first = auth::newToken();
  std::string second = auth::newToken();
  ASSERT_TRUE(store.saveToken(first).isOk());
  struct stat before {};
  ASSERT_EQ(::stat(store.tokenPath().c_str(), &before), 0);
  // A reader that opened the old file keeps reading the whole old token:
  // the new one arrives as a new file renamed over the name, never as a
  // rewrite of the old one.
  std::ifstream old_reader(store.tokenPath());
  ASSERT_TRUE(store.saveToken(second).isOk());
  std::string old_line;
  std::getline(old_reader, old_line);
  EXPECT_EQ(old_line, first);
  struct stat after {};
  ASSERT_EQ(::stat(store.tokenPath().c_str(), &after), 0);
  EXPECT_NE(before.st_ino, after.st_ino);
  EXPECT_EQ(contentOf(store.tokenPath()), second + "\n");
  EXPECT_EQ(after.st_mode & 07777, 0600u);
  // No temporary file is left behind.
  int files = 0;
  for (const auto& e : fs::directory_iterator(store.dir())) {
    (void)e;
    ++files;
  }
  EXPECT_EQ(files, 1);
}

TEST_F(CredentialsTest, RemoveTokenDeletesTheFile) {
  CredentialStore store(root_ / "cfg");
  ASSERT_TRUE(store.saveToken(auth::newToken()).isOk());
  ASSERT_TRUE(store.removeToken().isOk());
  EXPECT_FALSE(fs::exists(store.tokenPath()));
}

TEST_F(CredentialsTest, ServerAndCaCertAreSavedBesideTheToken) {
  CredentialStore store(root_ / "cfg");
  EXPECT_FALSE(store.readServer().has_value());
  ASSERT_TRUE(store.saveServer("https://ty.example:8443").isOk());
  ASSERT_TRUE(store.saveCaCert("/etc/ty/ca.pem").isOk());
  EXPECT_EQ(store.readServer().value_or(""), "https://ty.example:8443");
  EXPECT_EQ(store.readCaCert().value_or(""), "/etc/ty/ca.pem");
  ASSERT_TRUE(store.removeCaCert().isOk());
  EXPECT_FALSE(store.readCaCert().has_value());
}

constexpr const char* kServer = "http://127.0.0.1:8080";

TEST_F(CredentialsTest, SavedTokenGoesOnlyToTheServerItWasSavedFor) {
  CredentialStore store(root_ / "cfg");
  std::string token = auth::newToken();
  ASSERT_TRUE(store.saveToken(token).isOk());
  ASSERT_TRUE(store.saveServer("https://trainyard.lab:8443").isOk());
  auto same = resolveToken(store, "https://trainyard.lab:8443/");
  ASSERT_TRUE(same.isOk());
  ASSERT_TRUE(same->has_value());
  EXPECT_EQ((*same)->token, token);
  // Another server (a --server flag, or TRAINYARD_SERVER set by someone
  // else's environment) never gets it.
  auto other = resolveToken(store, "http://evil.example:8080");
  ASSERT_TRUE(other.isOk());
  EXPECT_FALSE(other->has_value());
}

TEST_F(CredentialsTest, EnvironmentTokenWinsOverTheFile) {
  CredentialStore store(root_ / "cfg");
  std::string from_file = auth::newToken();
  std::string from_env = auth::newToken();
  ASSERT_TRUE(store.saveToken(from_file).isOk());

  auto resolved = resolveToken(store, kServer);
  ASSERT_TRUE(resolved.isOk());
  ASSERT_TRUE(resolved->has_value());
  EXPECT_EQ((*resolved)->token, from_file);
  EXPECT_EQ((*resolved)->source, store.tokenPath().string());

  ::setenv(kTokenEnv, from_env.c_str(), 1);
  resolved = resolveToken(store, kServer);
  ASSERT_TRUE(resolved.isOk());
  ASSERT_TRUE(resolved->has_value());
  EXPECT_EQ((*resolved)->token, from_env);
  EXPECT_EQ((*resolved)->source, kTokenEnv);

  // An empty variable counts as unset.
  ::setenv(kTokenEnv, "", 1);
  resolved = resolveToken(store, kServer);
  ASSERT_TRUE(resolved.isOk());
  EXPECT_EQ((*resolved)->token, from_file);
}

TEST_F(CredentialsTest, EnvironmentTokenWinsEvenOverAnUnsafeFile) {
  CredentialStore store(root_ / "cfg");
  ASSERT_TRUE(store.saveToken(auth::newToken()).isOk());
  ASSERT_EQ(::chmod(store.tokenPath().c_str(), 0644), 0);
  EXPECT_FALSE(resolveToken(store, kServer).isOk());
  std::string from_env = auth::newToken();
  ::setenv(kTokenEnv, from_env.c_str(), 1);
  auto resolved = resolveToken(store, kServer);
  ASSERT_TRUE(resolved.isOk());
  EXPECT_EQ((*resolved)->token, from_env);
}

TEST_F(CredentialsTest, NoTokenAnywhereIsNone) {
  auto resolved = resolveToken(CredentialStore(root_ / "cfg"), kServer);
  ASSERT_TRUE(resolved.isOk());
  EXPECT_FALSE(resolved->has_value());
  resolved = resolveToken(std::nullopt, kServer);
  ASSERT_TRUE(resolved.isOk());
  EXPECT_FALSE(resolved->has_value());
}

TEST_F(CredentialsTest, AMalformedTokenIsRefusedWithoutShowingIt) {
  ::setenv(kTokenEnv, "hunter2-not-a-token", 1);
  auto resolved = resolveToken(std::nullopt, kServer);
  ASSERT_FALSE(resolved.isOk());
  EXPECT_NE(resolved.status().message().find(kTokenEnv), std::string::npos);
  EXPECT_EQ(resolved.status().message().find("hunter2"), std::string::npos);
}

}  // namespace
}  // namespace ty
