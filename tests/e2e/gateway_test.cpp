// The API gateway against the real server: every route needs credentials,
// the bootstrap admin, HTTPS, rate limits and lockout, hostile input
// (path traversal, oversized and slow requests), secrets kept out of the
// log, and projects kept apart.
#include <sys/stat.h>

#include <regex>
#include <set>

#include "harness.h"

namespace ty::e2e {
namespace {

std::string toUpper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string show(const HttpResult& r) {
  return "HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 500) + r.error;
}

std::string show(const ProcResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

// Checks a 401 as the contract has it: code, shape and challenge.
::testing::AssertionResult isUnauthenticated(const HttpResult& r) {
  if (r.status != 401) return ::testing::AssertionFailure() << "want 401, got " << show(r);
  if (r.errorCode() != "unauthenticated") {
    return ::testing::AssertionFailure() << "want code unauthenticated: " << show(r);
  }
  if (r.header("WWW-Authenticate").find("Bearer") == std::string::npos) {
    return ::testing::AssertionFailure() << "no Bearer challenge in WWW-Authenticate (\""
                                         << r.header("WWW-Authenticate") << "\"): " << show(r);
  }
  return ::testing::AssertionSuccess();
}

// Seconds in a Retry-After header; 0 when missing or not a number.
int retryAfter(const HttpResult& r) {
  try {
    return std::stoi(r.header("Retry-After"));
  } catch (const std::exception&) {
    return 0;
  }
}

// Mode bits of a file (-1 when it cannot be read).
int fileMode(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return -1;
  return static_cast<int>(st.st_mode & 07777);
}

// How many times `needle` occurs in `text`.
int countOf(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

// The OpenAPI path with every parameter filled: ids with 1, names with "x".
std::string concretePath(const std::string& path) {
  std::string out = path;
  for (size_t open; (open = out.find('{')) != std::string::npos;) {
    size_t close = out.find('}', open);
    if (close == std::string::npos) break;
    out.replace(open, close - open + 1, out.substr(open, close - open + 1) == "{id}" ? "1" : "x");
  }
  return out;
}

// A server started with `config_` (YAML) as its --config when not empty.
class GatewayTest : public E2eTest {
 protected:
  std::vector<std::string> serverArgs() const override {
    std::vector<std::string> args = E2eTest::serverArgs();
    if (!config_.empty()) {
      writeFile(tmp_.sub("config.yaml"), config_);
      args.insert(args.end(), {"--config", tmp_.sub("config.yaml")});
    }
    return args;
  }
  std::string config_;
};

// ---- Credentials ----

TEST_F(GatewayTest, EveryRouteButLoginProbesAndTheDocumentNeedsCredentials) {
  const Api anon = api().anonymous();
  HttpResult doc = anon.get("/api/v1/openapi.json");
  ASSERT_EQ(doc.status, 200) << "the OpenAPI document is public: " << show(doc);
  ASSERT_TRUE(doc.json.contains("paths") && doc.json["paths"].is_object()) << show(doc);
  static const std::set<std::string> kMethods = {"get", "post", "put", "patch", "delete"};
  // /metrics is open like the probes unless a scrape token is set.
  static const std::set<std::string> kPublic = {"POST /api/v1/login", "GET /healthz", "GET /readyz",
                                                "GET /api/v1/openapi.json", "GET /metrics"};
  std::set<std::string> seen;
  int walked = 0;
  for (const auto& [path, item] : doc.json["paths"].items()) {
    for (const auto& [method, op] : item.items()) {
      if (!kMethods.count(method)) continue;
      const std::string route = toUpper(method) + " " + path;
      seen.insert(route);
      if (kPublic.count(route)) continue;
      const std::string target = concretePath(path);
      HttpResult r = anon.request(toUpper(method), target);
      EXPECT_TRUE(isUnauthenticated(r)) << route << " (" << target << ")";
      ++walked;
    }
  }
  EXPECT_GE(walked, 20) << "the document lists too few routes to prove anything";
  // The walk covers the identity routes too, so a missing document entry
  // cannot hide an open route.
  for (const char* route :
       {"GET /api/v1/whoami", "GET /api/v1/users", "POST /api/v1/users", "POST /api/v1/tokens",
        "DELETE /api/v1/tokens/{id}", "GET /api/v1/audit", "GET /api/v1/jobs", "POST /api/v1/jobs",
        "POST /api/v1/logout", "POST /api/v1/login"}) {
    EXPECT_TRUE(seen.count(route)) << route << " is not in the OpenAPI document";
  }
  for (const char* open : {"/healthz", "/readyz"}) {
    EXPECT_EQ(anon.get(open).status, 200) << open;
  }
  // Login without credentials is refused as wrong credentials, not as a
  // request that needs a token.
  HttpResult login = anon.post("/api/v1/login", R"({"user": "nobody", "password": "nothing"})");
  EXPECT_EQ(login.status, 401) << show(login);
}

TEST_F(GatewayTest, MalformedUnknownAndRevokedTokensAre401) {
  HttpResult me = api().get("/api/v1/whoami");
  ASSERT_EQ(me.status, 200) << show(me);
  EXPECT_EQ(me.json.value("user", ""), "admin") << show(me);
  EXPECT_EQ(me.json.value("admin", false), true) << show(me);

  HttpResult issued = api().post("/api/v1/tokens", R"({"name": "doomed"})");
  ASSERT_EQ(issued.status, 201) << show(issued);
  const std::string doomed = issued.json.value("token", "");
  const Api as_doomed = apiAs(doomed);
  ASSERT_EQ(as_doomed.get("/api/v1/whoami").status, 200);
  HttpResult revoke =
      api().request("DELETE", "/api/v1/tokens/" + issued.json["id"].dump(), std::nullopt);
  ASSERT_EQ(revoke.status, 204) << show(revoke);

  // A disabled user's tokens stop working with the user.
  const std::string dora = userToken("dora", "default", "engineer");
  ASSERT_EQ(apiAs(dora).get("/api/v1/whoami").status, 200);
  HttpResult disable = api().request("PATCH", "/api/v1/users/dora", R"({"disabled": true})");
  ASSERT_EQ(disable.status, 200) << show(disable);

  std::string truncated = server_->adminToken();
  truncated.pop_back();
  const std::vector<std::pair<std::string, httplib::Headers>> cases = {
      {"no credentials", {}},
      {"malformed token", {{"Authorization", "Bearer not-a-token"}}},
      {"truncated token", {{"Authorization", "Bearer " + truncated}}},
      {"unknown token", {{"Authorization", "Bearer " + newApiToken()}}},
      {"revoked token", {{"Authorization", "Bearer " + doomed}}},
      {"disabled user's token", {{"Authorization", "Bearer " + dora}}},
      {"empty bearer", {{"Authorization", "Bearer "}}},
      {"other scheme", {{"Authorization", "Basic YWRtaW46YWRtaW4="}}},
      {"unknown session", {{"Cookie", "ty_session=" + newApiToken()}}},
  };
  const Api anon = api().anonymous();
  for (const auto& [what, headers] : cases) {
    EXPECT_TRUE(isUnauthenticated(anon.get("/api/v1/whoami", headers))) << what;
    EXPECT_TRUE(isUnauthenticated(anon.get("/api/v1/jobs", headers))) << what;
    EXPECT_TRUE(isUnauthenticated(
        anon.post("/api/v1/jobs", scriptJob("true").dump(), "application/json", headers)))
        << what;
  }
  // Revoking one token leaves the others alone.
  EXPECT_EQ(api().get("/api/v1/whoami").status, 200);
}

TEST_F(GatewayTest, ASessionCookieNeedsItsCsrfTokenToChangeAnything) {
  const std::string password = "Granite-Otter-3141";
  ASSERT_FALSE(userToken("cleo", "default", "engineer", password).empty());
  const Api anon = api().anonymous();
  HttpResult login =
      anon.post("/api/v1/login", Json{{"user", "cleo"}, {"password", password}}.dump());
  ASSERT_EQ(login.status, 200) << show(login);
  EXPECT_EQ(login.json.value("user", ""), "cleo");
  const std::string csrf = login.json.value("csrf_token", "");
  ASSERT_FALSE(csrf.empty()) << show(login);
  const std::string set_cookie = login.header("Set-Cookie");
  for (const char* attribute : {"HttpOnly", "Secure", "SameSite=Strict", "Path=/"}) {
    EXPECT_NE(set_cookie.find(attribute), std::string::npos) << attribute << ": " << set_cookie;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(set_cookie, m, std::regex("ty_session=([^;]+)"))) << set_cookie;
  const httplib::Headers cookie = {{"Cookie", "ty_session=" + m[1].str()}};
  httplib::Headers with_csrf = cookie;
  with_csrf.emplace("X-CSRF-Token", csrf);

  HttpResult me = anon.get("/api/v1/whoami", cookie);
  ASSERT_EQ(me.status, 200) << show(me);
  EXPECT_EQ(me.json.value("user", ""), "cleo");
  EXPECT_EQ(me.json["auth"].value("kind", ""), "session") << show(me);

  const std::string job = scriptJob("true").dump();
  HttpResult forged = anon.post("/api/v1/jobs", job, "application/json", cookie);
  EXPECT_EQ(forged.status, 403) << "no CSRF token: " << show(forged);
  httplib::Headers wrong_csrf = cookie;
  wrong_csrf.emplace("X-CSRF-Token", csrf + "x");
  forged = anon.post("/api/v1/jobs", job, "application/json", wrong_csrf);
  EXPECT_EQ(forged.status, 403) << "wrong CSRF token: " << show(forged);
  EXPECT_TRUE(api().get("/api/v1/jobs").json["jobs"].empty()) << "a forged request was stored";

  HttpResult submitted = anon.post("/api/v1/jobs", job, "application/json", with_csrf);
  EXPECT_EQ(submitted.status, 201) << show(submitted);
  EXPECT_EQ(submitted.json.value("user", ""), "cleo") << show(submitted);

  HttpResult logout = anon.post("/api/v1/logout", "", "application/json", with_csrf);
  EXPECT_EQ(logout.status, 204) << show(logout);
  EXPECT_TRUE(isUnauthenticated(anon.get("/api/v1/whoami", cookie))) << "after logout";
}

// ---- Bootstrap ----

TEST(GatewayBootstrapTest, FirstStartWritesAndPrintsTheAdminTokenOnce) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  TempDir tmp;
  ServerProcess server(tmp.sub("data"), tmp.sub("server.log"));
  server.useBootstrapTokenFile(false);
  ASSERT_TRUE(server.start());
  const std::string token_file = tmp.sub("data") + "/admin.token";
  ASSERT_TRUE(fileExists(token_file)) << server.log();
  EXPECT_EQ(fileMode(token_file), 0600);
  const std::string token = server.adminToken();
  EXPECT_TRUE(std::regex_match(token, std::regex("ty_[A-Za-z0-9_-]{43}"))) << token;
  EXPECT_EQ(countOf(server.log(), token), 1) << server.log();

  HttpResult me = server.api().get("/api/v1/whoami");
  ASSERT_EQ(me.status, 200) << show(me);
  EXPECT_EQ(me.json.value("user", ""), "admin");
  EXPECT_EQ(me.json.value("admin", false), true);
  HttpResult projects = server.api().get("/api/v1/projects");
  ASSERT_EQ(projects.status, 200) << show(projects);
  EXPECT_NE(projects.body.find("\"default\""), std::string::npos) << show(projects);

  // The log is appended across starts: still one copy of the token.
  ASSERT_TRUE(server.restart());
  EXPECT_EQ(countOf(server.log(), token), 1) << server.log();
  EXPECT_EQ(server.adminToken(), token);
  EXPECT_EQ(server.api().get("/api/v1/whoami").status, 200);
}

TEST(GatewayBootstrapTest, ATokenFileIsUsedAndNeverPrinted) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  TempDir tmp;
  ServerProcess server(tmp.sub("data"), tmp.sub("server.log"));
  ASSERT_TRUE(server.start());
  EXPECT_EQ(server.api().get("/api/v1/whoami").json.value("user", ""), "admin");
  ASSERT_TRUE(server.restart());
  EXPECT_EQ(server.api().get("/api/v1/whoami").status, 200);
  EXPECT_EQ(server.log().find(server.adminToken()), std::string::npos) << server.log();

  // Not a token: the server refuses to start and names the flag.
  writeFile(tmp.sub("bad.token"), "hunter2\n");
  ProcResult bad =
      runCli({"server", "--listen", "127.0.0.1:0", "--data-dir", tmp.sub("other"), "--fake-gpus",
              "1xA100-80GB", "--bootstrap-token-file", tmp.sub("bad.token")},
             {}, 10s);
  EXPECT_NE(bad.exit_code, 0) << show(bad);
  EXPECT_NE((bad.out + bad.err).find("bootstrap-token-file"), std::string::npos) << show(bad);
  EXPECT_EQ((bad.out + bad.err).find("hunter2"), std::string::npos) << show(bad);
}

// ---- TLS ----

class GatewayTlsTest : public E2eTest {
 protected:
  void SetUp() override {
    ASSERT_FALSE(trainyardBin().empty()) << "TRAINYARD_BIN is not set";
    cert_ = tmp_.sub("c.pem");
    key_ = tmp_.sub("k.pem");
    ProcResult gen = runProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048",
                                 "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext",
                                 "subjectAltName=IP:127.0.0.1", "-keyout", key_, "-out", cert_});
    ASSERT_EQ(gen.exit_code, 0) << show(gen);
    data_dir_ = tmp_.sub("data");
    server_ = std::make_unique<ServerProcess>(
        data_dir_, tmp_.sub("server.log"),
        std::vector<std::string>{"--fake-gpus", "1xA100-80GB", "--tls-cert", cert_, "--tls-key",
                                 key_});
    server_->setCaCert(cert_);
    ASSERT_TRUE(server_->start());
  }
  std::string cert_;
  std::string key_;
};

TEST_F(GatewayTlsTest, ServesHttpsOnlyAndIsTrustedThroughItsCertificate) {
  ASSERT_EQ(server_->url().rfind("https://", 0), 0u) << server_->url();
  HttpResult me = api().get("/api/v1/whoami");
  ASSERT_EQ(me.status, 200) << show(me);
  EXPECT_EQ(me.json.value("user", ""), "admin");
  EXPECT_EQ(me.json.value("admin", false), true);

  // Without the certificate as a trust anchor the client refuses the server.
  HttpResult untrusted = Api(server_->url(), server_->adminToken()).get("/healthz");
  EXPECT_EQ(untrusted.status, 0) << show(untrusted);

  // Plain HTTP to the same port gets no HTTP answer worth the name.
  std::string plain = rawExchange(
      server_->url(), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n", 5s);
  int status = rawStatus(plain);
  EXPECT_TRUE(status == 0 || status >= 400) << plain.substr(0, 300);
  EXPECT_EQ(plain.find("ok"), std::string::npos) << plain.substr(0, 300);
  EXPECT_EQ(api().get("/readyz").status, 200) << "the server survives a plain HTTP client";
}

TEST_F(GatewayTlsTest, TheCliTalksHttpsWithThePrivateCa) {
  ProcResult jobs = runCli({"jobs"}, cliEnv());
  EXPECT_EQ(jobs.exit_code, 0) << show(jobs);
  ProcResult via_flag = runCli({"--ca-cert", cert_, "whoami"}, [&] {
    auto env = cliEnv();
    env.erase("TRAINYARD_CA_CERT");
    return env;
  }());
  EXPECT_EQ(via_flag.exit_code, 0) << show(via_flag);
  EXPECT_NE(via_flag.out.find("admin"), std::string::npos) << show(via_flag);
}

TEST(GatewayTlsStartTest, AMissingKeyStopsTheStartNamingTheFlag) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  TempDir tmp;
  ProcResult gen =
      runProcess({"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                  "-subj", "/CN=127.0.0.1", "-keyout", tmp.sub("k.pem"), "-out", tmp.sub("c.pem")});
  ASSERT_EQ(gen.exit_code, 0) << show(gen);
  const std::vector<std::string> base = {"server",      "--listen",     "127.0.0.1:0",
                                         "--data-dir",  tmp.sub("var"), "--fake-gpus",
                                         "1xA100-80GB", "--tls-cert",   tmp.sub("c.pem")};
  std::vector<std::string> missing = base;
  missing.insert(missing.end(), {"--tls-key", tmp.sub("no-such-key.pem")});
  ProcResult r = runCli(missing, {}, 10s);
  EXPECT_NE(r.exit_code, 0) << show(r);
  EXPECT_FALSE(r.timed_out) << show(r);
  EXPECT_NE((r.out + r.err).find("--tls-key"), std::string::npos) << show(r);

  // A certificate without its key is refused the same way.
  r = runCli(base, {}, 10s);
  EXPECT_NE(r.exit_code, 0) << show(r);
  EXPECT_FALSE(r.timed_out) << show(r);
  EXPECT_NE((r.out + r.err).find("--tls-key"), std::string::npos) << show(r);
}

// ---- Rate limits and lockout ----

class GatewayRateLimitTest : public GatewayTest {
 protected:
  GatewayRateLimitTest() {
    config_ =
        "api:\n"
        "  rate_limit: {burst: 5, per_second: 0.5}\n"
        "  login_rate_limit: {burst: 3, per_second: 0.5}\n";
  }
};

TEST_F(GatewayRateLimitTest, EachTokenHasItsOwnBucket) {
  HttpResult first = api().post("/api/v1/tokens", R"({"name": "first"})");
  ASSERT_EQ(first.status, 201) << show(first);
  HttpResult second = api().post("/api/v1/tokens", R"({"name": "second"})");
  ASSERT_EQ(second.status, 201) << show(second);
  const Api busy = apiAs(first.json.value("token", ""));
  for (int i = 1; i <= 5; ++i) {
    HttpResult r = busy.get("/api/v1/whoami");
    ASSERT_EQ(r.status, 200) << "request " << i << " of the burst: " << show(r);
  }
  // The bucket refills one request per two seconds: the sixth quick request
  // is refused (a slow machine may have earned one more in the meantime).
  HttpResult limited;
  for (int i = 6; i <= 7 && limited.status != 429; ++i) limited = busy.get("/api/v1/whoami");
  ASSERT_EQ(limited.status, 429) << show(limited);
  EXPECT_EQ(limited.errorCode(), "resource_exhausted") << show(limited);
  EXPECT_GE(retryAfter(limited), 1) << "Retry-After: \"" << limited.header("Retry-After") << "\"";

  HttpResult other = apiAs(second.json.value("token", "")).get("/api/v1/whoami");
  EXPECT_EQ(other.status, 200) << "another token is not limited: " << show(other);
}

TEST_F(GatewayRateLimitTest, GuessingTokensIsLimitedPerAddress) {
  const Api anon = api().anonymous();
  std::vector<int> statuses;
  HttpResult limited;
  for (int i = 0; i < 8 && limited.status != 429; ++i) {
    limited = anon.get("/api/v1/whoami", {{"Authorization", "Bearer " + newApiToken()}});
    statuses.push_back(limited.status);
  }
  ASSERT_EQ(statuses.front(), 401) << show(limited);
  ASSERT_EQ(limited.status, 429) << "8 guesses from one address, none limited";
  EXPECT_EQ(limited.errorCode(), "resource_exhausted") << show(limited);
  EXPECT_GE(retryAfter(limited), 1) << "Retry-After: \"" << limited.header("Retry-After") << "\"";
  // A valid token has a bucket of its own.
  EXPECT_EQ(api().get("/api/v1/whoami").status, 200);
}

TEST_F(GatewayRateLimitTest, LoginIsLimitedPerAddress) {
  const Api anon = api().anonymous();
  for (int i = 1; i <= 3; ++i) {
    HttpResult r = anon.post("/api/v1/login", R"({"user": "nobody", "password": "nothing"})");
    ASSERT_EQ(r.status, 401) << "attempt " << i << ": " << show(r);
  }
  HttpResult limited;
  for (int i = 4; i <= 5 && limited.status != 429; ++i) {
    limited = anon.post("/api/v1/login", R"({"user": "nobody", "password": "nothing"})");
  }
  ASSERT_EQ(limited.status, 429) << show(limited);
  EXPECT_EQ(limited.errorCode(), "resource_exhausted") << show(limited);
  EXPECT_GE(retryAfter(limited), 1) << "Retry-After: \"" << limited.header("Retry-After") << "\"";
}

TEST_F(GatewayTest, FiveWrongPasswordsLockTheAccountAndAreAudited) {
  const std::string password = "Lattice-Quartz-4417";
  ASSERT_FALSE(userToken("lena", "default", "engineer", password).empty());
  const Api anon = api().anonymous();
  for (int i = 1; i <= 5; ++i) {
    Json body = {{"user", "lena"}, {"password", "wrong-guess-" + std::to_string(i)}};
    HttpResult r = anon.post("/api/v1/login", body.dump());
    ASSERT_EQ(r.status, 401) << "attempt " << i << ": " << show(r);
    EXPECT_EQ(r.errorCode(), "unauthenticated") << show(r);
  }
  HttpResult locked =
      anon.post("/api/v1/login", Json{{"user", "lena"}, {"password", password}}.dump());
  EXPECT_EQ(locked.status, 429) << show(locked);
  EXPECT_EQ(locked.errorCode(), "resource_exhausted") << show(locked);
  EXPECT_GE(retryAfter(locked), 1) << "Retry-After: \"" << locked.header("Retry-After") << "\"";
  EXPECT_NE(locked.body.find("locked"), std::string::npos) << show(locked);

  HttpResult audit = api().get("/api/v1/audit?limit=1000");
  ASSERT_EQ(audit.status, 200) << show(audit);
  int failed_logins = 0;
  for (const auto& rec : audit.json["records"]) {
    if (rec.value("path", "") == "/api/v1/login" && rec.value("status", 0) == 401) {
      ++failed_logins;
    }
  }
  EXPECT_GE(failed_logins, 5) << audit.body.substr(0, 2000);
  EXPECT_EQ(audit.body.find("wrong-guess"), std::string::npos) << audit.body.substr(0, 2000);
  EXPECT_EQ(audit.body.find(password), std::string::npos) << audit.body.substr(0, 2000);
}

// ---- Hostile input ----

TEST_F(GatewayTest, PathTraversalNeverReachesAFile) {
  std::int64_t id = api().submit(scriptJob("echo hello"));
  ASSERT_EQ(id, 1);
  api().waitDone(id);
  ASSERT_EQ(api().logs(id), "hello\n");
  const std::vector<std::string> targets = {
      "/api/v1/jobs/1/logs/../../../../etc/passwd",
      "/api/v1/jobs/1/logs/..%2f..%2f..%2f..%2fetc%2fpasswd",
      "/api/v1/jobs/1/logs%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
      "/api/v1/jobs/%2e%2e/logs",
      "/api/v1/jobs/%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd/logs",
      "/api/v1/jobs/%252e%252e/logs",
      "/api/v1/jobs/1/logs?replica=../../x",
      "/api/v1/jobs/1/logs?replica=..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
      "/api/v1/jobs/1/logs?replica=0/../../../../../../etc/passwd",
      "/api/v1/jobs/1/logs?attempt=../../../../etc/passwd",
      "/%2e%2e/%2e%2e/etc/passwd",
      "/%2e%2e%2f%2e%2e%2f%2e%2e%2f%2e%2e%2fetc%2fpasswd",
      "/%252e%252e/%252e%252e/etc/passwd",
      "/../../../../etc/passwd",
      "/..%5c..%5c..%5cetc%5cpasswd",
      "/static/../../../../etc/passwd",
      "//etc/passwd",
  };
  for (const auto& target : targets) {
    std::string answer =
        rawExchange(server_->url(), "GET " + target +
                                        " HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                                        "Authorization: Bearer " +
                                        server_->adminToken() + "\r\nConnection: close\r\n\r\n");
    EXPECT_NE(rawStatus(answer), 200) << target << ":\n" << answer.substr(0, 500);
    EXPECT_EQ(answer.find("root:"), std::string::npos) << target << ":\n" << answer.substr(0, 500);
  }
  EXPECT_EQ(api().get("/readyz").status, 200);
}

TEST_F(GatewayTest, OversizedBodiesHeadersAndNestingAreRefused) {
  // Default max_body_bytes is 1 MiB.
  Json big = {{"command", {"true"}}, {"env", {{"BIG", std::string(2 << 20, 'x')}}}};
  HttpResult r = api().post("/api/v1/jobs", big.dump());
  EXPECT_EQ(r.status, 413) << show(r);

  r = api().get("/api/v1/whoami", {{"X-Padding", std::string(9 * 1024, 'a')}});
  EXPECT_TRUE(r.status == 431 || r.status == 400) << show(r);
  EXPECT_EQ(api().get("/readyz").status, 200) << "the server survives a huge header";

  auto nested = [](int depth) {
    std::string doc = R"({"command": ["true"], "labels": )";
    for (int i = 0; i < depth; ++i) doc += R"({"a": )";
    doc += "1";
    for (int i = 0; i < depth; ++i) doc += "}";
    return doc + "}";
  };
  r = api().post("/api/v1/jobs", nested(100));
  EXPECT_EQ(r.status, 400) << show(r);
  EXPECT_FALSE(r.errorCode().empty()) << show(r);
  // Deep enough to overflow a recursive parser's stack, yet under the body
  // limit (600 KB), in both body formats the API reads.
  r = api().post("/api/v1/jobs", nested(100000));
  EXPECT_EQ(r.status, 400) << show(r);
  const std::string yaml =
      "command: [\"true\"]\nlabels: " + std::string(100000, '[') + std::string(100000, ']') + "\n";
  r = api().post("/api/v1/jobs", yaml, "application/yaml");
  EXPECT_EQ(r.status, 400) << show(r);
  EXPECT_EQ(api().get("/readyz").status, 200) << "the server survives deep nesting";
  EXPECT_TRUE(api().get("/api/v1/jobs").json["jobs"].empty()) << "nothing was stored";
}

class GatewaySlowClientTest : public GatewayTest {
 protected:
  // A short idle timeout too: a client cut off in the middle of its headers
  // gets an answer and then counts as an idle keep-alive connection.
  GatewaySlowClientTest() { config_ = "api:\n  request_timeout: 1s\n  idle_timeout: 1s\n"; }
};

TEST_F(GatewaySlowClientTest, AStalledRequestIsCutOffWhileOthersAreServed) {
  RawConnection slow(server_->url());
  ASSERT_TRUE(slow.connected());
  ASSERT_TRUE(slow.send("GET /api/v1/who"));  // half a request line, then nothing
  RawConnection slower(server_->url());
  ASSERT_TRUE(slower.send("GET /api/v1/whoami HTTP/1.1\r\nHost: 127.0.0.1\r\nX-A: "));
  // Others are served meanwhile.
  HttpResult me = api().get("/api/v1/whoami");
  EXPECT_EQ(me.status, 200) << show(me);
  // The generous deadline only bounds the wait; the server cuts the client
  // off after request_timeout (1s).
  std::string got = slow.readAll(15s);
  EXPECT_TRUE(slow.closedByPeer()) << "the stalled connection is still open; got: " << got;
  EXPECT_NE(rawStatus(got), 200) << got;
  got = slower.readAll(15s);
  EXPECT_TRUE(slower.closedByPeer()) << "the stalled connection is still open; got: " << got;
  EXPECT_NE(rawStatus(got), 200) << got;
  EXPECT_EQ(api().get("/api/v1/whoami").status, 200);
}

// ---- Secrets ----

TEST_F(GatewayTest, TheLogHoldsNoPasswordOrToken) {
  const std::string password = "Obsidian-Ferret-9921";
  const std::string user_token = userToken("sam", "default", "engineer", password);
  ASSERT_FALSE(user_token.empty());
  const Api anon = api().anonymous();
  const std::string wrong = "Marmalade-Wrong-1234";
  EXPECT_EQ(anon.post("/api/v1/login", Json{{"user", "sam"}, {"password", wrong}}.dump()).status,
            401);
  HttpResult login = anon.post(
      "/api/v1/login", Json{{"user", "sam"}, {"password", password}, {"mode", "token"}}.dump());
  ASSERT_EQ(login.status, 201) << show(login);
  const std::string login_token = login.json.value("token", "");
  HttpResult session =
      anon.post("/api/v1/login", Json{{"user", "sam"}, {"password", password}}.dump());
  ASSERT_EQ(session.status, 200) << show(session);
  std::string cookie = session.header("Set-Cookie");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(cookie, m, std::regex("ty_session=([^;]+)"))) << cookie;
  const std::string session_token = m[1];
  const std::string csrf = session.json.value("csrf_token", "");

  const std::string unknown = newApiToken();
  std::string truncated = user_token;
  truncated.pop_back();
  EXPECT_EQ(anon.get("/api/v1/whoami", {{"Authorization", "Bearer " + unknown}}).status, 401);
  EXPECT_EQ(anon.get("/api/v1/whoami", {{"Authorization", "Bearer " + truncated}}).status, 401);
  EXPECT_EQ(apiAs(user_token).get("/api/v1/whoami").status, 200);
  EXPECT_EQ(apiAs(login_token).get("/api/v1/whoami").status, 200);
  EXPECT_EQ(anon.get("/api/v1/whoami", {{"Cookie", "ty_session=" + session_token}}).status, 200);
  EXPECT_EQ(api().get("/api/v1/jobs").status, 200);

  // Stopped, so that everything it would write is written.
  EXPECT_EQ(server_->stop(), 0);
  const std::string log = server_->log();
  const std::vector<std::pair<std::string, std::string>> secrets = {
      {"password", password},
      {"wrong password", wrong},
      {"admin token", server_->adminToken()},
      {"user token", user_token},
      {"login token", login_token},
      {"session", session_token},
      {"csrf token", csrf},
      {"unknown token", unknown},
      {"truncated token", truncated},
  };
  for (const auto& [what, secret] : secrets) {
    if (secret.empty()) continue;
    EXPECT_EQ(log.find(secret), std::string::npos) << what << " is in the server log:\n" << log;
  }
}

// ---- Projects ----

// The job ids a /api/v1/nodes answer shows.
std::set<std::int64_t> jobsOnNodes(const Json& doc) {
  std::set<std::int64_t> out;
  if (!doc.is_object() || !doc.contains("nodes")) return out;
  for (const auto& n : doc["nodes"]) {
    for (const auto& g : n.value("gpus", Json::array())) {
      if (g.contains("job") && g["job"].is_number_integer())
        out.insert(g["job"].get<std::int64_t>());
      for (const auto& j : g.value("jobs", Json::array())) {
        if (j.is_number_integer()) out.insert(j.get<std::int64_t>());
      }
    }
  }
  return out;
}

TEST_F(GatewayTest, ProjectsAreKeptApart) {
  const std::string erin = userToken("erin", "a", "engineer");
  const std::string vera = userToken("vera", "b", "viewer");
  const std::string bert = userToken("bert", "b", "engineer");
  ASSERT_FALSE(erin.empty() || vera.empty() || bert.empty());
  Json spec = scriptJob("sleep 30", 1);
  spec["project"] = "b";
  std::int64_t id = apiAs(bert).submit(spec);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(api().waitState(id, "running"));
  const std::string job = "/api/v1/jobs/" + std::to_string(id);

  // Someone of another project cannot tell the job from a missing one.
  const Api as_erin = apiAs(erin);
  HttpResult missing = as_erin.get("/api/v1/jobs/987654");
  for (const std::string& path : {job, job + "/events", job + "/attempts", job + "/logs"}) {
    HttpResult r = as_erin.get(path);
    EXPECT_EQ(r.status, 404) << path << ": " << show(r);
    EXPECT_EQ(r.errorCode(), "not_found") << path << ": " << show(r);
  }
  HttpResult hidden = as_erin.get(job);
  EXPECT_EQ(hidden.json["error"].value("message", ""),
            std::regex_replace(missing.json["error"].value("message", ""), std::regex("987654"),
                               std::to_string(id)))
      << show(hidden) << "\nvs " << show(missing);
  for (const char* query : {"", "?project=b", "?state=running", "?user=bert"}) {
    HttpResult list = as_erin.get(std::string("/api/v1/jobs") + query);
    EXPECT_TRUE(list.status == 200 || list.status == 403 || list.status == 404) << show(list);
    for (const auto& j : list.json.value("jobs", Json::array())) {
      EXPECT_NE(j.value("id", std::int64_t{0}), id) << query << ": " << show(list);
    }
  }
  HttpResult cancel = as_erin.post(job + "/cancel", "");
  EXPECT_EQ(cancel.status, 404) << show(cancel);
  HttpResult nodes = as_erin.get("/api/v1/nodes");
  ASSERT_EQ(nodes.status, 200) << show(nodes);
  EXPECT_FALSE(jobsOnNodes(nodes.json).count(id)) << nodes.body;

  // A viewer of the project sees it but cannot stop it.
  const Api as_vera = apiAs(vera);
  EXPECT_EQ(as_vera.get(job).status, 200);
  bool listed = false;
  for (const auto& j : as_vera.get("/api/v1/jobs").json.value("jobs", Json::array())) {
    listed = listed || j.value("id", std::int64_t{0}) == id;
  }
  EXPECT_TRUE(listed);
  EXPECT_TRUE(jobsOnNodes(as_vera.get("/api/v1/nodes").json).count(id));
  cancel = as_vera.post(job + "/cancel", "");
  EXPECT_EQ(cancel.status, 403) << show(cancel);
  EXPECT_EQ(cancel.errorCode(), "permission_denied") << show(cancel);
  EXPECT_EQ(api().state(id), "running");

  EXPECT_EQ(apiAs(bert).post(job + "/cancel", "").status, 200);
  EXPECT_EQ(api().waitDone(id).value("state", ""), "cancelled");
}

}  // namespace
}  // namespace ty::e2e
