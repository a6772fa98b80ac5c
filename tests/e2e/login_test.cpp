// `trainyard login` and `logout` against a real server: the saved token,
// its file mode, a password read from stdin, and the hint after logout.
#include <sys/stat.h>

#include "harness.h"

namespace ty::e2e {
namespace {

std::string show(const ProcResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

int fileMode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

class LoginTest : public E2eTest {
 protected:
  // The CLI environment without TRAINYARD_TOKEN: only a saved login counts.
  std::map<std::string, std::string> env() const {
    auto e = cliEnv();
    e.erase("TRAINYARD_TOKEN");
    return e;
  }
  // $XDG_CONFIG_HOME/trainyard/token, XDG_CONFIG_HOME as cliEnv() sets it.
  std::string tokenDir() const { return tmp_.sub("home") + "/.config/trainyard"; }
  std::string tokenFile() const { return tokenDir() + "/token"; }
};

TEST_F(LoginTest, ASavedTokenIsUsedUntilLogout) {
  const std::string token = userToken("lou", "default", "engineer");
  ASSERT_FALSE(token.empty());
  ProcResult before = runCli({"jobs"}, env());
  EXPECT_NE(before.exit_code, 0) << show(before);
  EXPECT_NE(before.err.find("login"), std::string::npos) << "want a hint to log in\n"
                                                         << show(before);

  ProcResult login = runCli({"login", "--token", token}, env());
  ASSERT_EQ(login.exit_code, 0) << show(login);
  ASSERT_TRUE(fileExists(tokenFile())) << show(login);
  EXPECT_EQ(fileMode(tokenFile()), 0600);
  EXPECT_EQ(fileMode(tokenDir()), 0700);
  EXPECT_NE(readFile(tokenFile()).find(token), std::string::npos);

  ProcResult jobs = runCli({"jobs"}, env());
  EXPECT_EQ(jobs.exit_code, 0) << show(jobs);
  ProcResult who = runCli({"whoami"}, env());
  EXPECT_EQ(who.exit_code, 0) << show(who);
  EXPECT_NE(who.out.find("lou"), std::string::npos) << show(who);

  // TRAINYARD_TOKEN wins over the saved login.
  ProcResult as_admin = runCli({"whoami"}, cliEnv());
  EXPECT_EQ(as_admin.exit_code, 0) << show(as_admin);
  EXPECT_NE(as_admin.out.find("admin"), std::string::npos) << show(as_admin);

  ProcResult logout = runCli({"logout"}, env());
  EXPECT_EQ(logout.exit_code, 0) << show(logout);
  EXPECT_FALSE(fileExists(tokenFile()));
  // Logging out revokes the token on the server, not only the local copy.
  EXPECT_EQ(apiAs(token).get("/api/v1/whoami").status, 401);

  ProcResult after = runCli({"jobs"}, env());
  EXPECT_NE(after.exit_code, 0) << show(after);
  EXPECT_NE(after.err.find("trainyard login"), std::string::npos) << "want a hint to log in\n"
                                                                  << show(after);
}

TEST_F(LoginTest, AnUnknownTokenIsNotSaved) {
  ProcResult login = runCli({"login", "--token", newApiToken()}, env());
  EXPECT_NE(login.exit_code, 0) << show(login);
  EXPECT_FALSE(fileExists(tokenFile())) << readFile(tokenFile());
}

TEST_F(LoginTest, APasswordOnStdinLogsIn) {
  const std::string password = "Basalt-Heron-5530";
  ASSERT_FALSE(userToken("uma", "default", "engineer", password).empty());

  ProcResult wrong = runCli({"login", "--user", "uma"}, env(), 30s, "not-the-password\n");
  EXPECT_NE(wrong.exit_code, 0) << show(wrong);
  EXPECT_FALSE(fileExists(tokenFile()));
  EXPECT_EQ((wrong.out + wrong.err).find("not-the-password"), std::string::npos) << show(wrong);

  ProcResult login = runCli({"login", "--user", "uma"}, env(), 30s, password + "\n");
  ASSERT_EQ(login.exit_code, 0) << show(login);
  ASSERT_TRUE(fileExists(tokenFile()));
  EXPECT_EQ(fileMode(tokenFile()), 0600);
  EXPECT_EQ((login.out + login.err).find(password), std::string::npos) << show(login);

  ProcResult who = runCli({"whoami"}, env());
  EXPECT_EQ(who.exit_code, 0) << show(who);
  EXPECT_NE(who.out.find("uma"), std::string::npos) << show(who);
  ProcResult jobs = runCli({"jobs"}, env());
  EXPECT_EQ(jobs.exit_code, 0) << show(jobs);

  // The login made an API token of uma's (a session would not outlive the
  // command).
  HttpResult tokens = api().get("/api/v1/tokens?user=uma");
  ASSERT_EQ(tokens.status, 200) << tokens.body;
  int live = 0;
  for (const auto& t : tokens.json["tokens"]) live += t.value("live", false) ? 1 : 0;
  EXPECT_EQ(live, 2) << "the harness's token and the login's: " << tokens.body;
}

}  // namespace
}  // namespace ty::e2e
