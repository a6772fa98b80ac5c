// The authorization matrix, generated from the API's route table: every
// route x every kind of caller (anonymous, global admin, each project role,
// a user in no project) x a resource in the caller's project or another x
// owned by the caller or someone else, over real HTTP against the real
// ApiServer and JobService (in-memory store, fake executor).
//
// The expected answer of each cell comes from the role table
// (auth::authorize on the route's declared permission): allowed is 2xx,
// denied 403, hidden 404, no credentials 401. A route without a case below
// fails the test, so a new route cannot ship untested.
#include <httplib.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <thread>

#include "api/identity_routes.h"
#include "auth/job_tokens.h"
#include "auth/tokens.h"
#include "server/api_server_test_fixture.h"

namespace ty::test {
namespace {

using auth::Decision;
using auth::Permission;
using auth::Role;

// One request of a cell: what to send and, when the route's rule is not
// the plain role table, the decision to expect.
struct Call {
  Call(std::string p, std::string b, std::optional<Decision> e = std::nullopt,
       std::optional<std::string> t = std::nullopt)
      : path(std::move(p)), body(std::move(b)), expect(e), token(std::move(t)) {}
  std::string path;
  std::string body;
  std::optional<Decision> expect;    // nullopt: authorize() on the route's target
  std::optional<std::string> token;  // a credential of its own (logout revokes it)
};

struct Cell {
  std::string principal;  // user name; empty: anonymous
  std::string project;    // "a": the caller's own (for members), "b": another
  bool own = true;        // the resource belongs to the caller
};

class ApiAuthzTest : public ApiServerTest {
 protected:
  void SetUp() override {
    ApiServerTest::SetUp();
    ApiOptions o;
    o.gateway.rate_limit = {1'000'000, 1'000'000.0, 100};
    o.gateway.login_rate_limit = o.gateway.rate_limit;
    o.gateway.job_tokens = job_tokens_;
    // A web UI build, so that its pages answer 200 like the other public
    // routes.
    std::string root = (std::filesystem::path(::testing::TempDir()) / "web_XXXXXX").string();
    ASSERT_NE(::mkdtemp(root.data()), nullptr);
    web_root_ = root;
    std::filesystem::create_directories(web_root_ / "assets");
    std::ofstream(web_root_ / "index.html") << kIndex;
    std::ofstream(web_root_ / "assets" / "app-AbC_1.js") << "console.log(1)";
    o.web_root = web_root_.string();
    startApi(o);

    for (const char* p : {"default", "a", "b"}) ASSERT_TRUE(store_->createProject({p, 1}).isOk());
    // An unlimited queue for every project, so that jobs are still accepted
    // once the queue routes have created queues of their own (a server with
    // queues refuses a job whose project has none).
    QueueConfig everyone;
    everyone.name = everyone.project = "default";
    ASSERT_TRUE(service_->putQueue(everyone).isOk());
    addUser("root", true);
    for (Role r : auth::kAllRoles) {
      std::string name = std::string(auth::roleName(r)) + "-a";
      addUser(name, false);
      ASSERT_TRUE(store_->putMembership({name, "a", auth::roleName(r)}).isOk());
      principals_.push_back(name);
    }
    addUser("nobody", false);
    addUser("other", false);  // owns the resources that are not the caller's
    ASSERT_TRUE(store_->putMembership({"other", "a", "engineer"}).isOk());
    ASSERT_TRUE(store_->putMembership({"other", "b", "engineer"}).isOk());
    principals_.insert(principals_.begin(), "root");
    principals_.push_back("nobody");
  }
  void TearDown() override {
    ApiServerTest::TearDown();
    std::error_code ec;
    std::filesystem::remove_all(web_root_, ec);
  }
  // A user with password "pw-<name>" and a token in tokens_.
  void addUser(const std::string& name, bool admin) {
    ApiServerTest::addUser(name, admin, /*password=*/true);
    tokens_[name] = issue(name);
  }
  std::string fresh(const std::string& stem) { return stem + std::to_string(++counter_); }
  // A new pending or running job of `user` in `project`.
  std::string job(const std::string& project, const std::string& user) {
    JobSpec s = spec(0, fresh("j"));
    s.project = project;
    auto j = submit(std::move(s), user);
    EXPECT_TRUE(j.isOk()) << j.status().toString();
    return j.isOk() ? std::to_string(j->id.value()) : "0";
  }
  std::string newUser() {
    std::string name = fresh("u");
    User u;
    u.name = name;
    u.created_at = 1;
    EXPECT_TRUE(store_->createUser(u).isOk());
    return name;
  }

  // The request for `route` in `cell`, or nullopt when the route has no
  // case (a test failure).
  std::optional<Call> callFor(const Route& route, const Cell& c) {
    const std::string owner = c.own ? c.principal : "other";
    const std::string key = route.doc.method + " " + route.doc.path;
    const std::string& p = c.project;
    if (key == "GET /healthz" || key == "GET /readyz" || key == "GET /api/v1/openapi.json" ||
        key == "GET /metrics") {
      return Call{route.doc.path, ""};
    }
    if (!route.doc.in_openapi) {
      // The web UI's pages and files: the path with its parameters filled.
      std::string path = route.doc.path;
      for (auto [param, value] : {std::pair{"{id}", "7"}, std::pair{"{section}", "users"},
                                  std::pair{"{file}", "app-AbC_1.js"}}) {
        if (auto at = path.find(param); at != std::string::npos) {
          path.replace(at, std::string_view(param).size(), value);
        }
      }
      return Call{path, ""};
    }
    if (key == "POST /api/v1/login") {
      std::string t = c.principal.empty() ? "" : tokens_[c.principal];
      if (t.empty()) return Call{route.doc.path, R"({"user":"root","password":"wrong"})"};
      return Call{route.doc.path, Json{{"token", t}}.dump()};
    }
    if (key == "POST /api/v1/logout") {
      return Call{route.doc.path, "", std::nullopt,
                  c.principal.empty() ? std::nullopt : std::optional(issue(c.principal))};
    }
    if (key == "GET /api/v1/whoami" || key == "GET /api/v1/projects" ||
        key == "GET /api/v1/nodes" || key == "GET /api/v1/queues" || key == "GET /api/v1/users" ||
        key == "GET /api/v1/audit") {
      return Call{route.doc.path, ""};
    }
    if (key == "POST /api/v1/users") {
      return Call{route.doc.path, Json{{"name", fresh("n")}}.dump()};
    }
    if (key == "GET /api/v1/users/{name}" || key == "PUT /api/v1/users/{name}/password") {
      // One's own record: anyone; someone else's: global admins.
      std::string name = c.own ? c.principal : newUser();
      Decision d = c.own || c.principal == "root" ? Decision::kAllow : Decision::kDeny;
      std::string body;
      if (route.doc.method == "PUT") {
        Json b = {{"password", "pw-" + name}};
        if (c.own) b["current_password"] = "pw-" + name;
        body = b.dump();
      }
      std::string path = "/api/v1/users/" + (c.principal.empty() ? "root" : name);
      if (route.doc.method == "PUT") path += "/password";
      return Call{path, body, d};
    }
    if (key == "PATCH /api/v1/users/{name}") {
      return Call{"/api/v1/users/" + newUser(), R"({"disabled":false})"};
    }
    if (key == "POST /api/v1/projects") {
      return Call{route.doc.path, Json{{"name", fresh("p")}}.dump()};
    }
    if (key == "DELETE /api/v1/projects/{p}") {
      std::string name = fresh("p");
      EXPECT_TRUE(store_->createProject({name, 1}).isOk());
      return Call{"/api/v1/projects/" + name, ""};
    }
    if (key == "PATCH /api/v1/projects/{p}") {
      return Call{"/api/v1/projects/" + p, R"({"webhook_url":"https://hooks.example.org/x"})"};
    }
    if (key == "GET /api/v1/projects/{p}/members") {
      return Call{"/api/v1/projects/" + p + "/members", ""};
    }
    if (key == "PUT /api/v1/projects/{p}/members/{user}") {
      return Call{"/api/v1/projects/" + p + "/members/" + newUser(), R"({"role":"viewer"})"};
    }
    if (key == "DELETE /api/v1/projects/{p}/members/{user}") {
      std::string u = newUser();
      EXPECT_TRUE(store_->putMembership({u, p, "viewer"}).isOk());
      return Call{"/api/v1/projects/" + p + "/members/" + u, ""};
    }
    if (key == "GET /api/v1/tokens") {
      return Call{c.own ? route.doc.path : route.doc.path + "?user=other", ""};
    }
    if (key == "POST /api/v1/tokens") {
      Json b = {{"name", "t"}};
      if (!c.own) b["user"] = "other";
      return Call{route.doc.path, b.dump()};
    }
    if (key == "DELETE /api/v1/tokens/{id}") {
      std::string secret = issue(owner.empty() ? "other" : owner);
      auto t = store_->findTokenByHash(auth::tokenHash(secret), clock_.now()).value();
      std::string path = "/api/v1/tokens/" + std::to_string(t->id);
      if (!c.own) path += "?user=other";
      return Call{path, ""};
    }
    if (key == "PUT /api/v1/queues/{name}") {
      return Call{"/api/v1/queues/" + fresh("q"),
                  R"({"cohort":"lab","quota":{"gpu":{"nominal":1}}})"};
    }
    if (key == "DELETE /api/v1/queues/{name}") {
      QueueConfig q;
      q.name = q.project = fresh("q");
      EXPECT_TRUE(service_->putQueue(q).isOk());
      return Call{"/api/v1/queues/" + q.name, ""};
    }
    if (key == "POST /api/v1/jobs") {
      return Call{route.doc.path,
                  Json{{"name", "t"}, {"project", p}, {"command", {"true"}}}.dump()};
    }
    if (key == "GET /api/v1/jobs" || key == "GET /api/v1/jobs/counts") {
      return Call{route.doc.path + "?project=" + p, ""};
    }
    if (key == "GET /api/v1/jobs/{id}" || key == "GET /api/v1/jobs/{id}/events" ||
        key == "GET /api/v1/jobs/{id}/attempts" || key == "GET /api/v1/jobs/{id}/logs" ||
        key == "POST /api/v1/jobs/{id}/cancel" || key == "GET /api/v1/jobs/{id}/metrics" ||
        key == "POST /api/v1/jobs/{id}/metrics") {
      std::string path = route.doc.path;
      path.replace(path.find("{id}"), 4, job(p, owner.empty() ? "other" : owner));
      bool report = key == "POST /api/v1/jobs/{id}/metrics";
      return Call{path, report ? R"({"step":1,"metrics":{"loss":0.5}})" : ""};
    }
    return std::nullopt;
  }

  // What the role table says for `cell` on `route`.
  Decision expected(const Route& route, const Cell& c) {
    auth::Principal pr;
    pr.user = c.principal;
    pr.is_admin = c.principal == "root";
    for (Role r : auth::kAllRoles) {
      if (c.principal == std::string(auth::roleName(r)) + "-a") pr.projects["a"] = r;
    }
    if (route.access.kind == Access::Kind::kFixed) {
      return auth::authorize(pr, route.access.permission, {});
    }
    bool global =
        auth::permissionInfo(route.access.permission).scope == auth::PermissionScope::kGlobal;
    return auth::authorize(pr, route.access.permission,
                           {global ? "" : c.project, c.own ? c.principal : "other"});
  }

  httplib::Result send(const Route& route, const Call& call, const std::string& token) {
    httplib::Client http("127.0.0.1", port_);
    httplib::Headers h;
    if (!token.empty()) h.emplace("Authorization", "Bearer " + token);
    const std::string& m = route.doc.method;
    if (m == "GET") return http.Get(call.path, h);
    if (m == "DELETE") return http.Delete(call.path, h);
    if (m == "PUT") return http.Put(call.path, h, call.body, "application/json");
    if (m == "PATCH") return http.Patch(call.path, h, call.body, "application/json");
    return http.Post(call.path, h, call.body, "application/json");
  }

  static constexpr const char* kIndex = "<!doctype html><title>trainyard</title>";
  std::filesystem::path web_root_;
  std::shared_ptr<const auth::JobTokens> job_tokens_ =
      std::make_shared<const auth::JobTokens>(std::string(32, 'k'));
  std::map<std::string, std::string> tokens_;
  std::vector<std::string> principals_;
  int counter_ = 0;
};

int statusOf(Decision d) {
  switch (d) {
    case Decision::kAllow:
      return 200;
    case Decision::kDeny:
      return 403;
    case Decision::kHidden:
      return 404;
  }
  return 0;
}

TEST_F(ApiAuthzTest, EveryRouteEveryRoleOwnAndOtherProject) {
  int cells = 0;
  std::map<std::string, std::string> summary;  // route -> "root:2xx admin-a:403 ..."
  for (const Route& route : api_->routes()) {
    const std::string key = route.doc.method + " " + route.doc.path;
    bool is_public = route.access.kind == Access::Kind::kPublic;
    std::vector<std::string> callers = principals_;
    callers.insert(callers.begin(), "");  // anonymous
    for (const std::string& who : callers) {
      for (const char* project : {"a", "b"}) {
        for (bool own : {true, false}) {
          Cell cell{who, project, own};
          auto call = callFor(route, cell);
          ASSERT_TRUE(call.has_value()) << key << " has no case in this test: add one";
          std::string token = who.empty() ? "" : call->token.value_or(tokens_[who]);
          auto res = send(route, *call, token);
          ASSERT_TRUE(res) << key << ": no answer";
          ++cells;
          std::string where = key + " as " + (who.empty() ? "anonymous" : who) + " in " + project +
                              (own ? " (own)" : " (other's)") + ": " + res->body;
          if (is_public) {
            bool login_fail = key == "POST /api/v1/login" && who.empty();
            EXPECT_EQ(res->status / 100, login_fail ? 4 : 2) << where;
            continue;
          }
          if (who.empty()) {
            EXPECT_EQ(res->status, 401) << where;
            EXPECT_EQ(res->get_header_value("WWW-Authenticate"), "Bearer realm=\"trainyard\"")
                << where;
            continue;
          }
          Decision d = call->expect.value_or(expected(route, cell));
          int want = statusOf(d);
          if (want == 200) {
            EXPECT_EQ(res->status / 100, 2) << where;
          } else {
            EXPECT_EQ(res->status, want) << where;
          }
          if (project == std::string("a") && own) {
            summary[key] += " " + who + ":" + std::to_string(res->status);
          }
        }
      }
    }
  }
  // Every route was called by all 7 callers in 4 cells each.
  EXPECT_EQ(cells, static_cast<int>(api_->routes().size()) * 7 * 4);
  for (const auto& [route, line] : summary) std::printf("%s:%s\n", route.c_str(), line.c_str());
}

TEST_F(ApiAuthzTest, JobTokenReachesOnlyItsJobsMetricsWhileItsAttemptRuns) {
  const std::int64_t id = std::stoll(job("a", "other"));
  const std::int64_t other_id = std::stoll(job("a", "other"));
  Job running = waitJob(JobId(id), [](const Job& j) { return j.state == JobState::kRunning; });
  ASSERT_EQ(running.state, JobState::kRunning);
  const std::string token = job_tokens_->issue({JobId(id), running.attempts});
  httplib::Client http("127.0.0.1", port_);
  httplib::Headers h = {{"Authorization", "Bearer " + token}};
  const std::string mine = "/api/v1/jobs/" + std::to_string(id);
  const std::string body = R"({"step":3,"metrics":{"loss":0.25},"key":"s3"})";
  auto posted = http.Post(mine + "/metrics", h, body, "application/json");
  ASSERT_TRUE(posted);
  EXPECT_EQ(posted->status, 200) << posted->body;
  EXPECT_EQ(Json::parse(posted->body)["added"], 1);
  // A retry with the same key adds nothing.
  EXPECT_EQ(Json::parse(http.Post(mine + "/metrics", h, body, "application/json")->body)["added"],
            0);
  auto read = http.Get(mine + "/metrics?name=loss", h);
  ASSERT_EQ(read->status, 200) << read->body;
  EXPECT_EQ(Json::parse(read->body)["points"].size(), 1u);
  // Not another job's metrics, and no other route of its own job.
  const std::string other = "/api/v1/jobs/" + std::to_string(other_id);
  EXPECT_EQ(http.Post(other + "/metrics", h, body, "application/json")->status, 401);
  EXPECT_EQ(http.Get(mine, h)->status, 401);
  EXPECT_EQ(http.Post(mine + "/cancel", h, "", "application/json")->status, 401);
  // A token of another attempt, or forged with another key, is refused.
  httplib::Headers later = {
      {"Authorization", "Bearer " + job_tokens_->issue({JobId(id), running.attempts + 1})}};
  EXPECT_EQ(http.Post(mine + "/metrics", later, body, "application/json")->status, 401);
  auth::JobTokens forger(std::string(32, 'f'));
  httplib::Headers forged = {
      {"Authorization", "Bearer " + forger.issue({JobId(id), running.attempts})}};
  EXPECT_EQ(http.Post(mine + "/metrics", forged, body, "application/json")->status, 401);
}

TEST_F(ApiAuthzTest, JobListShowsOnlyReadableProjects) {
  std::string in_a = job("a", "other");
  std::string in_b = job("b", "other");
  auto ids = [&](const std::string& who) {
    httplib::Client http("127.0.0.1", port_);
    auto res = http.Get("/api/v1/jobs", {{"Authorization", "Bearer " + tokens_[who]}});
    EXPECT_EQ(res->status, 200) << res->body;
    std::set<std::string> out;
    const Json list = Json::parse(res->body);
    for (const auto& j : list["jobs"]) {
      out.insert(std::to_string(j["id"].get<std::int64_t>()));
    }
    return out;
  };
  EXPECT_EQ(ids("viewer-a"), (std::set<std::string>{in_a}));
  EXPECT_EQ(ids("root"), (std::set<std::string>{in_a, in_b}));
  EXPECT_TRUE(ids("nobody").empty());
}

TEST_F(ApiAuthzTest, ProjectScopedTokenSeesOnlyItsProject) {
  std::string in_a = job("a", "other");
  std::string in_b = job("b", "other");
  ApiToken want;
  want.user = "root";
  want.name = "ci";
  want.project = "a";
  auto scoped = issueToken(*store_, clock_.now(), want);
  ASSERT_TRUE(scoped.isOk()) << scoped.status().toString();
  httplib::Client http("127.0.0.1", port_);
  httplib::Headers h = {{"Authorization", "Bearer " + scoped->secret}};
  EXPECT_EQ(http.Get("/api/v1/jobs/" + in_a, h)->status, 200);
  EXPECT_EQ(http.Get("/api/v1/jobs/" + in_b, h)->status, 404);
  // Global powers do not travel with a token limited to one project.
  EXPECT_EQ(http.Get("/api/v1/users", h)->status, 403);
  auto list = Json::parse(http.Get("/api/v1/jobs", h)->body);
  ASSERT_EQ(list["jobs"].size(), 1u);
  EXPECT_EQ(std::to_string(list["jobs"][0]["id"].get<std::int64_t>()), in_a);
}

TEST_F(ApiAuthzTest, SigningInWithAScopedTokenKeepsItsScopeAndExpiry) {
  ApiToken want;
  want.user = "root";
  want.name = "ci";
  want.project = "a";
  want.expires_at = clock_.now() + 3'600'000;
  auto scoped = issueToken(*store_, clock_.now(), want);
  ASSERT_TRUE(scoped.isOk());
  httplib::Client http("127.0.0.1", port_);
  for (const char* mode : {"token", "session"}) {
    auto res = http.Post("/api/v1/login", Json{{"token", scoped->secret}, {"mode", mode}}.dump(),
                         "application/json");
    ASSERT_TRUE(res);
    ASSERT_EQ(res->status / 100, 2) << res->body;
  }
  // Every token of root now: none may be wider or live longer than the one
  // it came from.
  const std::vector<ApiToken> tokens = store_->tokensOfUser("root").value();
  for (const ApiToken& t : tokens) {
    if (t.name == "test") continue;  // the fixture's own
    EXPECT_EQ(t.project, "a") << t.name;
    EXPECT_GT(t.expires_at, 0) << t.name;
    EXPECT_LE(t.expires_at, want.expires_at) << t.name;
  }
}

TEST_F(ApiAuthzTest, IdempotencyKeyDoesNotReachAJobOfAnotherProject) {
  httplib::Client http("127.0.0.1", port_);
  httplib::Headers h = {{"Authorization", "Bearer " + tokens_["root"]},
                        {"Idempotency-Key", "nightly"}};
  auto body = [](const char* project) {
    return Json{{"name", "t"}, {"project", project}, {"command", {"true"}}}.dump();
  };
  EXPECT_EQ(http.Post("/api/v1/jobs", h, body("a"), "application/json")->status, 201);
  EXPECT_EQ(http.Post("/api/v1/jobs", h, body("a"), "application/json")->status, 200);
  EXPECT_EQ(http.Post("/api/v1/jobs", h, body("b"), "application/json")->status, 409);
}

TEST_F(ApiAuthzTest, PathThatIsNotUtf8GetsAnAnswerNotACrash) {
  httplib::Client http("127.0.0.1", port_);
  auto res = http.Get("/%FF%FE");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_TRUE(Json::accept(res->body)) << res->body;
  EXPECT_EQ(http.Get("/healthz")->status, 200);
}

TEST_F(ApiAuthzTest, BrowserGetsTheWebUiForUnknownPathsAndApiClientsJson) {
  httplib::Client http("127.0.0.1", port_);
  httplib::Headers browser = {{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}};
  auto page = http.Get("/jobs/7", browser);
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_EQ(page->body, kIndex);
  EXPECT_EQ(page->get_header_value("X-Frame-Options"), "DENY");
  auto unknown = http.Get("/no/such/page", browser);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 404);
  EXPECT_EQ(unknown->body, kIndex);
  EXPECT_EQ(unknown->get_header_value("Content-Type"), "text/html; charset=utf-8");
  for (const auto& [path, headers] :
       {std::pair{"/api/v1/nope", browser}, std::pair{"/no/such/page", httplib::Headers{}},
        std::pair{"/assets/nope.js", browser}, std::pair{"/assets/%2e%2e", browser}}) {
    auto res = http.Get(path, headers);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_TRUE(Json::accept(res->body)) << path << ": " << res->body;
  }
}

TEST_F(ApiAuthzTest, WebUiRoutesAreNotInTheOpenApiDocument) {
  httplib::Client http("127.0.0.1", port_);
  auto res = http.Get("/api/v1/openapi.json");
  ASSERT_TRUE(res);
  Json paths = Json::parse(res->body)["paths"];
  EXPECT_TRUE(paths.contains("/api/v1/jobs/{id}"));
  EXPECT_TRUE(paths.contains("/healthz"));
  for (const char* ui : {"/", "/jobs", "/jobs/{id}", "/admin/{section}", "/assets/{file}"}) {
    EXPECT_FALSE(paths.contains(ui)) << ui;
  }
  for (const auto& [path, ops] : paths.items()) {
    EXPECT_TRUE(path.starts_with("/api/") || path == "/healthz" || path == "/readyz" ||
                path == "/metrics")
        << path;
  }
}

TEST_F(ApiAuthzTest, WhoamiGivesASessionItsCsrfTokenBack) {
  httplib::Client http("127.0.0.1", port_);
  auto login = http.Post("/api/v1/login", R"({"user":"viewer-a","password":"pw-viewer-a"})",
                         "application/json");
  ASSERT_TRUE(login);
  ASSERT_EQ(login->status, 200) << login->body;
  const std::string csrf = Json::parse(login->body)["csrf_token"];
  std::string cookie = login->get_header_value("Set-Cookie");
  cookie = cookie.substr(0, cookie.find(';'));
  ASSERT_EQ(cookie.rfind("ty_session=", 0), 0u) << cookie;

  // A reloaded page: the cookie only.
  auto who = http.Get("/api/v1/whoami", {{"Cookie", cookie}});
  ASSERT_TRUE(who);
  ASSERT_EQ(who->status, 200) << who->body;
  Json body = Json::parse(who->body);
  EXPECT_EQ(body["auth"]["kind"], "session");
  EXPECT_EQ(body["csrf_token"], csrf);
  // ... which is enough to send changes again.
  auto out = http.Post("/api/v1/logout", {{"Cookie", cookie}, {"X-CSRF-Token", csrf}}, "",
                       "application/json");
  ASSERT_TRUE(out);
  EXPECT_EQ(out->status, 204) << out->body;
  EXPECT_EQ(http.Get("/api/v1/whoami", {{"Cookie", cookie}})->status, 401);

  // A token is not a session: no CSRF token to give.
  auto bearer = http.Get("/api/v1/whoami", {{"Authorization", "Bearer " + tokens_["viewer-a"]}});
  ASSERT_TRUE(bearer);
  ASSERT_EQ(bearer->status, 200);
  EXPECT_FALSE(Json::parse(bearer->body).contains("csrf_token")) << bearer->body;
}

TEST_F(ApiAuthzTest, RouteWithoutAccessDeclarationIsRefused) {
  std::vector<Route> routes = api_->routes();
  routes.push_back({{"GET", "/api/v1/new", "undeclared", {}, "", {200}},
                    Access{},
                    [](const httplib::Request&, httplib::Response&, Caller&) {}});
  Status st = validateRoutes(routes);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("GET /api/v1/new declares no access"), std::string::npos)
      << st.message();
  EXPECT_TRUE(validateRoutes(api_->routes()).isOk());
}

}  // namespace
}  // namespace ty::test
