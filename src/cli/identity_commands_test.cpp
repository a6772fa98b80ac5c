// The client commands against an in-process HTTP server that answers like
// the REST contract (docs/api.md): what is sent (the Authorization header,
// request bodies), what is saved, and what a user sees.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>

#include "auth/tokens.h"
#include "cli/client.h"
#include "cli/commands.h"
#include "cli/credentials.h"
#include "cli/saved_env_test_util.h"
#include "common/temp_dir_test_util.h"

namespace ty {
namespace {

namespace fs = std::filesystem;

struct Request {
  std::string method, path, body, authorization;
  bool had_user_header = false;
};

// A fake Trainyard API: one valid token for alice (password "s3cret"),
// routes answering with the contract's shapes, and a record of requests.
class FakeApi {
 public:
  explicit FakeApi(httplib::Server& svr) : svr_(svr) {
    valid_token_ = auth::newToken();
    issued_token_ = auth::newToken();
    routes();
  }

  const std::string& validToken() const { return valid_token_; }
  const std::string& issuedToken() const { return issued_token_; }

  std::vector<Request> requests() {
    std::lock_guard<std::mutex> lock(mu_);
    return requests_;
  }
  // The last request to `path` (method and path as sent, query included).
  std::optional<Request> last(const std::string& method, const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = requests_.rbegin(); it != requests_.rend(); ++it) {
      if (it->method == method && it->path == path) return *it;
    }
    return std::nullopt;
  }

 private:
  static void error(httplib::Response& res, int status, const std::string& code,
                    const std::string& message) {
    res.status = status;
    res.set_content(Json({{"error", {{"code", code}, {"message", message}}}}).dump(),
                    "application/json");
  }
  static void json(httplib::Response& res, int status, const Json& body) {
    res.status = status;
    res.set_content(body.dump(), "application/json");
  }

  void record(const httplib::Request& req) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string path = req.path;
    std::string query;
    for (const auto& [k, v] : req.params) query += (query.empty() ? "?" : "&") + k + "=" + v;
    requests_.push_back({req.method, path + query, req.body, req.get_header_value("Authorization"),
                         req.has_header("X-Trainyard-User")});
  }

  // True when the request carries a token this server knows; else answers 401.
  bool signedIn(const httplib::Request& req, httplib::Response& res) {
    std::string auth = req.get_header_value("Authorization");
    if (auth == "Bearer " + valid_token_ || auth == "Bearer " + issued_token_) return true;
    res.set_header("WWW-Authenticate", "Bearer realm=\"trainyard\"");
    error(res, 401, "unauthenticated", "token expired or revoked");
    return false;
  }

  static Json tokenBody(const std::string& name) {
    return {{"id", 7},
            {"user", "alice"},
            {"name", name},
            {"prefix", "abcdefgh"},
            {"project", nullptr},
            {"created_at", 1700000000000},
            {"expires_at", nullptr},
            {"revoked_at", nullptr},
            {"last_used_at", nullptr},
            {"live", true}};
  }

  void routes() {
    // After routing, when the body has been read.
    svr_.set_post_routing_handler(
        [this](const httplib::Request& req, httplib::Response&) { record(req); });
    svr_.Post("/api/v1/login", [this](const httplib::Request& req, httplib::Response& res) {
      Json body = Json::parse(req.body, nullptr, false);
      if (body.value("user", "") != "alice" || body.value("password", "") != "s3cret") {
        return error(res, 401, "unauthenticated", "wrong user name or password");
      }
      Json created = tokenBody(body.value("token_name", "cli"));
      created["token"] = issued_token_;
      json(res, 201, created);
    });
    svr_.Get("/api/v1/whoami", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      json(res, 200,
           {{"user", "alice"},
            {"admin", false},
            {"projects",
             {{{"project", "default"}, {"role", "engineer"}},
              {{"project", "vision"}, {"role", "admin"}}}},
            {"auth",
             {{"kind", "token"},
              {"token_id", 7},
              {"token_name", "laptop"},
              {"project", nullptr},
              {"expires_at", 0}}}});
    });
    svr_.Post("/api/v1/logout", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      res.status = 204;
    });
    svr_.Get("/api/v1/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      json(res, 200, {{"jobs", Json::array()}, {"next_before", nullptr}});
    });
    svr_.Get("/api/v1/nodes", [](const httplib::Request&, httplib::Response& res) {
      res.set_header("Retry-After", "7");
      error(res, 429, "resource_exhausted", "too many requests");
    });
    svr_.Get("/api/v1/users", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      json(res, 200,
           {{"users",
             {{{"name", "alice"},
               {"admin", false},
               {"disabled", false},
               {"has_password", true},
               {"created_at", 1700000000000},
               {"locked_until", 0}},
              {{"name", "bob"},
               {"admin", true},
               {"disabled", true},
               {"has_password", false},
               {"created_at", 1700000000000},
               {"locked_until", 0}}}}});
    });
    svr_.Get("/api/v1/users/alice", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      json(res, 200, {{"name", "alice"}, {"admin", false}, {"has_password", true}});
    });
    svr_.Put(R"(/api/v1/users/([a-z0-9._-]+)/password)",
             [this](const httplib::Request& req, httplib::Response& res) {
               if (!signedIn(req, res)) return;
               Json body = Json::parse(req.body, nullptr, false);
               if (req.matches[1] == "alice" && body.value("current_password", "") != "s3cret") {
                 return error(res, 403, "permission_denied", "the current password is wrong");
               }
               res.status = 204;
             });
    svr_.Post("/api/v1/users", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      Json body = Json::parse(req.body, nullptr, false);
      json(res, 201, {{"name", body["name"]}, {"admin", body.value("admin", false)}});
    });
    svr_.Patch(R"(/api/v1/users/([a-z0-9._-]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (!signedIn(req, res)) return;
                 Json body = Json::parse(req.body, nullptr, false);
                 json(res, 200,
                      {{"name", req.matches[1]},
                       {"admin", body.value("admin", false)},
                       {"disabled", body.value("disabled", false)}});
               });
    svr_.Get("/api/v1/projects", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      json(res, 200,
           {{"projects",
             {{{"name", "default"}, {"created_at", 1700000000000}, {"role", "engineer"}}}}});
    });
    svr_.Patch(R"(/api/v1/projects/([a-z0-9._-]+))",
               [this](const httplib::Request& req, httplib::Response& res) {
                 if (!signedIn(req, res)) return;
                 Json body = Json::parse(req.body, nullptr, false);
                 json(res, 200,
                      {{"name", req.matches[1]},
                       {"created_at", 1700000000000},
                       {"webhook_url", body["webhook_url"]}});
               });
    svr_.Delete(R"(/api/v1/projects/([a-z0-9._-]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  if (!signedIn(req, res)) return;
                  error(res, 403, "permission_denied", "only global admins may delete projects");
                });
    svr_.Get(R"(/api/v1/projects/([a-z0-9._-]+)/members)", [this](const httplib::Request& req,
                                                                  httplib::Response& res) {
      if (!signedIn(req, res)) return;
      if (req.matches[1] != "default") {
        return error(res, 404, "not_found", "no project \"" + std::string(req.matches[1]) + "\"");
      }
      json(res, 200, {{"members", {{{"user", "alice"}, {"role", "engineer"}}}}});
    });
    svr_.Put(R"(/api/v1/projects/([a-z0-9._-]+)/members/([a-z0-9._-]+))",
             [this](const httplib::Request& req, httplib::Response& res) {
               if (!signedIn(req, res)) return;
               Json body = Json::parse(req.body, nullptr, false);
               json(
                   res, 200,
                   {{"user", req.matches[2]}, {"project", req.matches[1]}, {"role", body["role"]}});
             });
    svr_.Get("/api/v1/tokens", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      json(res, 200, {{"tokens", {tokenBody("laptop")}}});
    });
    svr_.Post("/api/v1/tokens", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      Json body = Json::parse(req.body, nullptr, false);
      Json created = tokenBody(body.value("name", ""));
      created["token"] = issued_token_;
      json(res, 201, created);
    });
    svr_.Delete(R"(/api/v1/tokens/(\d+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  if (!signedIn(req, res)) return;
                  res.status = 204;
                });
    svr_.Get("/api/v1/audit", [this](const httplib::Request& req, httplib::Response& res) {
      if (!signedIn(req, res)) return;
      json(res, 200,
           {{"records",
             {{{"seq", 12},
               {"at", 1700000000000},
               {"user", "alice"},
               {"address", "10.0.0.5"},
               {"method", "POST"},
               {"path", "/api/v1/jobs"},
               {"status", 201},
               {"detail", "job 42"}}}},
            {"next_before", 11}});
    });
  }

  httplib::Server& svr_;
  std::string valid_token_;
  std::string issued_token_;
  std::mutex mu_;
  std::vector<Request> requests_;
};

// Runs a server on 127.0.0.1 port 0 in a thread for the test's lifetime.
class ServerThread {
 public:
  explicit ServerThread(httplib::Server& svr) : svr_(svr) {
    port_ = svr_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
  }
  ~ServerThread() {
    // stop() is a no-op until the accept loop runs; wait for it so the
    // join cannot hang.
    while (!svr_.is_running()) std::this_thread::yield();
    svr_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::Server& svr_;
  int port_ = -1;
  std::thread thread_;
};

struct Outcome {
  int code;
  std::string out, err;
};

class CommandsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(root_.path().empty());
    ::setenv("XDG_CONFIG_HOME", (root_ / "config").c_str(), 1);
    api_ = std::make_unique<FakeApi>(svr_);
    server_ = std::make_unique<ServerThread>(svr_);
    ASSERT_GT(server_->port(), 0);
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  void TearDown() override { server_.reset(); }

  // `trainyard --server URL args...` with `input` as stdin (not a terminal).
  Outcome run(std::vector<std::string> args, const std::string& input = "",
              bool with_server = true) {
    if (with_server) args.insert(args.begin(), {"--server", url_});
    std::istringstream in(input);
    std::ostringstream out, err;
    CliIo io;
    io.in = &in;
    io.out = &out;
    io.err = &err;
    io.in_is_terminal = false;
    int code = runClientCommand(args, io);
    return {code, out.str(), err.str()};
  }

  fs::path tokenFile() const { return root_ / "config" / "trainyard" / "token"; }
  void saveToken(const std::string& token) {
    ASSERT_TRUE(CredentialStore(root_ / "config" / "trainyard").saveToken(token).isOk());
  }
  std::string fileText(const fs::path& p) const {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  ::ty::testing::TempDir root_{"ty-cli-"};
  httplib::Server svr_;
  std::unique_ptr<FakeApi> api_;
  std::unique_ptr<ServerThread> server_;
  std::string url_;
  // The variables the CLI reads: unset for the test, restored after it.
  test::SavedEnv env_{"HOME", "XDG_CONFIG_HOME", kTokenEnv, kServerEnv, kCaCertEnv};
};

TEST_F(CommandsTest, PasswordLoginSavesTheIssuedTokenAndTheServer) {
  Outcome r = run({"login", "--user", "alice", "--token-name", "laptop"}, "s3cret\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "logged in as alice (projects: default, vision)\n");
  auto login = api_->last("POST", "/api/v1/login");
  ASSERT_TRUE(login);
  Json body = Json::parse(login->body);
  EXPECT_EQ(body["user"], "alice");
  EXPECT_EQ(body["password"], "s3cret");
  EXPECT_EQ(body["mode"], "token");
  EXPECT_EQ(body["token_name"], "laptop");
  EXPECT_EQ(fileText(tokenFile()), api_->issuedToken() + "\n");
  struct stat st {};
  ASSERT_EQ(::stat(tokenFile().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(fileText(root_ / "config" / "trainyard" / "server"), url_ + "\n");
  // The new token is checked before it is saved.
  auto whoami = api_->last("GET", "/api/v1/whoami");
  ASSERT_TRUE(whoami);
  EXPECT_EQ(whoami->authorization, "Bearer " + api_->issuedToken());
  EXPECT_EQ(r.out.find(api_->issuedToken()), std::string::npos);
  EXPECT_EQ(r.err.find(api_->issuedToken()), std::string::npos);
}

TEST_F(CommandsTest, LoginAsksForTheUserNameWhenNotGiven) {
  Outcome r = run({"login"}, "alice\ns3cret\n");
  ASSERT_EQ(r.code, 0) << r.err;
  auto login = api_->last("POST", "/api/v1/login");
  ASSERT_TRUE(login);
  Json body = Json::parse(login->body);
  EXPECT_EQ(body["user"], "alice");
  EXPECT_EQ(body["password"], "s3cret");
  // Without --token-name the token is named after the machine.
  EXPECT_EQ(body["token_name"].get<std::string>().rfind("cli", 0), 0u);
}

TEST_F(CommandsTest, WrongPasswordSavesNothing) {
  Outcome r = run({"login", "--user", "alice"}, "nope\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: wrong user name or password\n");
  EXPECT_FALSE(fs::exists(tokenFile()));
}

TEST_F(CommandsTest, LoginWithoutAPasswordOnStdinFails) {
  Outcome r = run({"login", "--user", "alice"}, "");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("no Password"), std::string::npos) << r.err;
  EXPECT_FALSE(api_->last("POST", "/api/v1/login"));
}

TEST_F(CommandsTest, LoginWithATokenChecksItAndSavesIt) {
  Outcome r = run({"login", "--token", api_->validToken()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "logged in as alice (projects: default, vision)\n");
  EXPECT_FALSE(api_->last("POST", "/api/v1/login"));
  EXPECT_EQ(fileText(tokenFile()), api_->validToken() + "\n");
}

TEST_F(CommandsTest, LoginReadsTheTokenFromStdinWithADash) {
  Outcome r = run({"login", "--token", "-"}, api_->validToken() + "\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(fileText(tokenFile()), api_->validToken() + "\n");
}

TEST_F(CommandsTest, LoginRefusesATokenTheServerDoesNotKnow) {
  std::string unknown = auth::newToken();
  Outcome r = run({"login", "--token", unknown});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("refused"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(unknown), std::string::npos);
  EXPECT_EQ(r.out.find(unknown), std::string::npos);
  EXPECT_FALSE(fs::exists(tokenFile()));
}

TEST_F(CommandsTest, LoginRefusesTextThatIsNotAToken) {
  Outcome r = run({"login", "--token", "hunter2"});
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.err.find("hunter2"), std::string::npos) << r.err;
  EXPECT_TRUE(api_->requests().empty());
}

TEST_F(CommandsTest, CommandsSendTheBearerTokenAndNoUserHeader) {
  saveToken(api_->validToken());
  Outcome r = run({"jobs"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto jobs = api_->last("GET", "/api/v1/jobs?limit=50");
  ASSERT_TRUE(jobs);
  EXPECT_EQ(jobs->authorization, "Bearer " + api_->validToken());
  EXPECT_FALSE(jobs->had_user_header);
}

TEST_F(CommandsTest, TheEnvironmentTokenWinsOverTheFile) {
  saveToken(auth::newToken());  // unknown to the server
  ::setenv(kTokenEnv, api_->validToken().c_str(), 1);
  Outcome r = run({"whoami"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(api_->last("GET", "/api/v1/whoami")->authorization, "Bearer " + api_->validToken());
}

TEST_F(CommandsTest, ARefusedTokenPrintsOneLineWithTheLoginHintAndNeverTheToken) {
  std::string stale = auth::newToken();
  saveToken(stale);
  Outcome r = run({"jobs"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("trainyard login"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("token expired or revoked"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.find(stale), std::string::npos);
  EXPECT_EQ(r.out.find(stale), std::string::npos);
}

TEST_F(CommandsTest, NoTokenAtAllSaysToLogIn) {
  Outcome r = run({"whoami"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("not logged in"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("trainyard login"), std::string::npos) << r.err;
  EXPECT_EQ(api_->last("GET", "/api/v1/whoami")->authorization, "");
}

TEST_F(CommandsTest, AnUnsafeTokenFileStopsTheCommandBeforeAnyRequest) {
  std::string token = api_->validToken();
  saveToken(token);
  ASSERT_EQ(::chmod(tokenFile().c_str(), 0644), 0);
  Outcome r = run({"whoami"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("chmod 600"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(token), std::string::npos);
  EXPECT_TRUE(api_->requests().empty());
}

TEST_F(CommandsTest, RateLimitShowsTheServerMessageAndRetryAfter) {
  saveToken(api_->validToken());
  Outcome r = run({"nodes"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: too many requests (retry after 7 seconds)\n");
}

TEST_F(CommandsTest, ForbiddenAndNotFoundShowTheServerMessage) {
  saveToken(api_->validToken());
  Outcome r = run({"projects", "delete", "default"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: only global admins may delete projects\n");
  r = run({"members", "secret"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: no project \"secret\"\n");
}

TEST_F(CommandsTest, LaterCommandsUseTheServerSavedAtLogin) {
  ASSERT_EQ(run({"login", "--token", api_->validToken()}).code, 0);
  Outcome r = run({"whoami"}, "", /*with_server=*/false);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Server:    " + url_), std::string::npos) << r.out;
  // TRAINYARD_SERVER still wins over the saved one; port 1 refuses.
  ::setenv(kServerEnv, "http://127.0.0.1:1", 1);
  r = run({"whoami"}, "", /*with_server=*/false);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("http://127.0.0.1:1"), std::string::npos) << r.err;
  // And the flag wins over the variable.
  r = run({"whoami"});
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(CommandsTest, WhoamiShowsUserProjectsAndToken) {
  saveToken(api_->validToken());
  Outcome r = run({"whoami"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("User:      alice\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("default (engineer), vision (admin)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("laptop (id 7)"), std::string::npos) << r.out;
  r = run({"-o", "json", "whoami"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json::parse(r.out)["user"], "alice");
}

TEST_F(CommandsTest, LogoutRevokesAtTheServerAndRemovesTheFile) {
  saveToken(api_->validToken());
  Outcome r = run({"logout"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "logged out\n");
  auto logout = api_->last("POST", "/api/v1/logout");
  ASSERT_TRUE(logout);
  EXPECT_EQ(logout->authorization, "Bearer " + api_->validToken());
  EXPECT_FALSE(fs::exists(tokenFile()));
}

TEST_F(CommandsTest, LogoutSucceedsWhenTheServerRefusesTheToken) {
  std::string stale = auth::newToken();
  saveToken(stale);
  Outcome r = run({"logout"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(tokenFile()));
  EXPECT_EQ(r.err.find(stale), std::string::npos);
}

TEST_F(CommandsTest, LogoutFromAnUnreachableServerForgetsTheTokenButSaysItLives) {
  saveToken(api_->validToken());
  Outcome r = run({"--server", "http://127.0.0.1:1", "logout"}, "", /*with_server=*/false);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("stays valid"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tokenFile()));
}

TEST_F(CommandsTest, PasswdSendsTheCurrentPasswordWhenChangingOnesOwn) {
  saveToken(api_->validToken());
  Outcome r = run({"passwd"}, "s3cret\nnew-secret\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "password changed for alice\n");
  Json body = Json::parse(api_->last("PUT", "/api/v1/users/alice/password")->body);
  EXPECT_EQ(body["current_password"], "s3cret");
  EXPECT_EQ(body["password"], "new-secret");

  r = run({"passwd"}, "wrong\nnew-secret\n");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "error: the current password is wrong\n");
}

TEST_F(CommandsTest, PasswdForAnotherUserAsksNoCurrentPassword) {
  saveToken(api_->validToken());
  Outcome r = run({"passwd", "--user", "bob"}, "bobs-new\n");
  ASSERT_EQ(r.code, 0) << r.err;
  Json body = Json::parse(api_->last("PUT", "/api/v1/users/bob/password")->body);
  EXPECT_FALSE(body.contains("current_password"));
  EXPECT_EQ(body["password"], "bobs-new");
}

TEST_F(CommandsTest, UsersListCreateAndUpdate) {
  saveToken(api_->validToken());
  Outcome r = run({"users"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out.rfind("NAME   ADMIN  DISABLED  PASSWORD  CREATED", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("bob    yes    yes"), std::string::npos) << r.out;

  r = run({"users", "create", "carol", "--admin", "--password-stdin"}, "pw-of-carol\n");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "created user carol (global admin)\n");
  Json body = Json::parse(api_->last("POST", "/api/v1/users")->body);
  EXPECT_EQ(body, Json({{"name", "carol"}, {"admin", true}, {"password", "pw-of-carol"}}));
  // The listing ran once: a sub-verb does not also list.
  int lists = 0;
  for (const auto& q : api_->requests()) lists += q.method == "GET" && q.path == "/api/v1/users";
  EXPECT_EQ(lists, 1);

  r = run({"users", "update", "bob", "--disabled", "false"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(Json::parse(api_->last("PATCH", "/api/v1/users/bob")->body),
            Json({{"disabled", false}}));
  EXPECT_EQ(run({"users", "update", "bob"}).code, 2);
  EXPECT_EQ(run({"users", "update", "bob", "--admin", "maybe"}).code, 2);
}

TEST_F(CommandsTest, ProjectsAndMembers) {
  saveToken(api_->validToken());
  Outcome r = run({"projects"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("default  engineer"), std::string::npos) << r.out;

  r = run({"members", "default"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "USER   ROLE\nalice  engineer\n");

  r = run({"members", "default", "add", "bob", "viewer"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "bob is viewer in default\n");
  EXPECT_EQ(Json::parse(api_->last("PUT", "/api/v1/projects/default/members/bob")->body),
            Json({{"role", "viewer"}}));

  r = run({"members", "default", "add", "bob", "overlord"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("data-engineer"), std::string::npos) << r.err;
}

TEST_F(CommandsTest, ProjectsUpdateSetsAndClearsTheWebhook) {
  saveToken(api_->validToken());
  Outcome r = run({"projects", "update", "default", "--webhook", "https://hooks.example.org/x"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "project default: webhook set to https://hooks.example.org/x\n");
  EXPECT_EQ(Json::parse(api_->last("PATCH", "/api/v1/projects/default")->body),
            Json({{"webhook_url", "https://hooks.example.org/x"}}));
  r = run({"projects", "update", "default", "--webhook", ""});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "project default: webhook cleared\n");
}

TEST_F(CommandsTest, TokensCreatePrintsTheSecretOnceWithAWarning) {
  saveToken(api_->validToken());
  Outcome r = run({"tokens", "create", "ci", "--expires-in", "30d", "--project", "vision"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, api_->issuedToken() + "\n");
  EXPECT_NE(r.err.find("will not be shown again"), std::string::npos) << r.err;
  Json body = Json::parse(api_->last("POST", "/api/v1/tokens")->body);
  EXPECT_EQ(body, Json({{"name", "ci"}, {"expires_in", "30d"}, {"project", "vision"}}));

  r = run({"tokens", "create", "short", "--expires-in", "3600", "--user", "bob"});
  ASSERT_EQ(r.code, 0) << r.err;
  body = Json::parse(api_->last("POST", "/api/v1/tokens")->body);
  EXPECT_EQ(body["expires_in"], 3600);
  EXPECT_EQ(body["user"], "bob");
}

TEST_F(CommandsTest, TokensListAndRevoke) {
  saveToken(api_->validToken());
  Outcome r = run({"tokens"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("ty_abcdefgh..."), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("live"), std::string::npos) << r.out;
  r = run({"tokens", "revoke", "7", "--user", "bob"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "revoked token 7\n");
  EXPECT_TRUE(api_->last("DELETE", "/api/v1/tokens/7?user=bob"));
}

TEST_F(CommandsTest, AuditTable) {
  saveToken(api_->validToken());
  Outcome r = run({"audit", "--user", "alice", "--limit", "5"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(api_->last("GET", "/api/v1/audit?limit=5&user=alice"));
  EXPECT_EQ(r.out.rfind("TIME", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("alice  10.0.0.5  POST    /api/v1/jobs  201     job 42"), std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("--before 11"), std::string::npos) << r.err;
}

TEST_F(CommandsTest, HttpsVerifiesTheServerAndTrustsAPrivateCaWhenGivenOne) {
  fs::path cert = root_ / "cert.pem";
  fs::path key = root_ / "key.pem";
  std::string make_cert =
      "openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout " +
      key.string() + " -out " + cert.string() + " >/dev/null 2>&1";
  if (std::system(make_cert.c_str()) != 0)
    GTEST_SKIP() << "no openssl command to make a certificate";
  httplib::SSLServer tls(cert.c_str(), key.c_str());
  ASSERT_TRUE(tls.is_valid());
  FakeApi api(tls);
  ServerThread thread(tls);
  std::string https = "https://127.0.0.1:" + std::to_string(thread.port());
  saveToken(api.validToken());

  // A self-signed certificate is not trusted by default...
  Outcome r = run({"--server", https, "whoami"}, "", /*with_server=*/false);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--ca-cert"), std::string::npos) << r.err;
  EXPECT_TRUE(api.requests().empty());

  // ...but is when named as the CA, by flag or by variable.
  r = run({"--server", https, "--ca-cert", cert.string(), "whoami"}, "", /*with_server=*/false);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(api.last("GET", "/api/v1/whoami")->authorization, "Bearer " + api.validToken());
  ::setenv(kCaCertEnv, cert.c_str(), 1);
  r = run({"--server", https, "whoami"}, "", /*with_server=*/false);
  EXPECT_EQ(r.code, 0) << r.err;
  ::unsetenv(kCaCertEnv);

  // A login remembers the CA with the server.
  r = run({"--server", https, "--ca-cert", cert.string(), "login", "--token", api.validToken()}, "",
          /*with_server=*/false);
  ASSERT_EQ(r.code, 0) << r.err;
  r = run({"whoami"}, "", /*with_server=*/false);
  EXPECT_EQ(r.code, 0) << r.err;
}

TEST_F(CommandsTest, AMissingCaCertFileIsAUsageError) {
  Outcome r = run({"--ca-cert", (root_ / "nope.pem").string(), "whoami"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("nope.pem"), std::string::npos) << r.err;
}

TEST(ServerUrlTest, OnlySchemeHostAndPortAreAccepted) {
  EXPECT_EQ(normalizeServerUrl("http://127.0.0.1:8080/").value(), "http://127.0.0.1:8080");
  EXPECT_EQ(normalizeServerUrl("https://ty.example.com").value(), "https://ty.example.com");
  EXPECT_EQ(normalizeServerUrl("https://[::1]:8443").value(), "https://[::1]:8443");
  EXPECT_FALSE(normalizeServerUrl("ftp://host").isOk());
  EXPECT_FALSE(normalizeServerUrl("host:8080").isOk());
  EXPECT_FALSE(normalizeServerUrl("http://host:8080/api").isOk());
  EXPECT_EQ(normalizeServerUrl("http://host/x").status().field(), "--server");
}

}  // namespace
}  // namespace ty
