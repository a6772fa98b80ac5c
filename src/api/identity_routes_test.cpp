#include "api/identity_routes.h"

#include <gtest/gtest.h>

#include <map>
#include <regex>

#include "api/gateway.h"
#include "api/http_status.h"
#include "auth/tokens.h"
#include "store/memory/memory_store.h"

namespace ty {
namespace {

using auth::Principal;
using auth::Role;

constexpr Timestamp kStart = 1'700'000'000'000;
constexpr DurationMs kDay = 86'400'000;

User makeUser(const std::string& name, bool admin) {
  User u;
  u.name = name;
  u.is_admin = admin;
  u.created_at = kStart;
  return u;
}

ApiToken tokenSpec(const std::string& user, const std::string& name,
                   const std::string& project = "", Timestamp expires_at = 0) {
  ApiToken t;
  t.user = user;
  t.name = name;
  t.project = project;
  t.expires_at = expires_at;
  return t;
}

struct Reply {
  int status = 0;
  Json body;
  std::string raw;
  std::string audit_detail;
  std::string code() const { return body.contains("error") ? body["error"].value("code", "") : ""; }
  std::string field() const {
    return body.contains("error") ? body["error"].value("field", "") : "";
  }
  std::string message() const {
    return body.contains("error") ? body["error"].value("message", "") : "";
  }
};

// The identity routes over a MemoryStore, called in-process the way the
// gateway calls them: find the route, check a fixed permission, run the
// handler, and for a resource route insist that the handler asked.
class IdentityRoutesTest : public ::testing::Test {
 protected:
  IdentityRoutesTest() {
    ctx_.store = &store_;
    ctx_.clock = &clock_;
    ctx_.password_params = auth::PasswordParams::minimal();
    routes_ = identityRoutes(ctx_);
    EXPECT_TRUE(store_.createUser(makeUser("root", true)).isOk());
    EXPECT_TRUE(store_.createUser(makeUser("alice", false)).isOk());
    EXPECT_TRUE(store_.createUser(makeUser("bob", false)).isOk());
    EXPECT_TRUE(store_.createProject({"vision", kStart}).isOk());
    EXPECT_TRUE(store_.createProject({"nlp", kStart}).isOk());
    EXPECT_TRUE(store_.putMembership({"alice", "vision", "admin"}).isOk());
    EXPECT_TRUE(store_.putMembership({"bob", "vision", "engineer"}).isOk());
    EXPECT_TRUE(store_.putMembership({"bob", "nlp", "viewer"}).isOk());
  }

  // The principal the gateway would resolve for `user` from the store.
  Principal principal(const std::string& user,
                      std::optional<std::string> token_project = std::nullopt) {
    Principal p;
    p.user = user;
    auto u = store_.getUser(user);
    p.is_admin = u.isOk() && u->is_admin;
    auto ms = store_.membershipsOfUser(user);
    if (ms.isOk()) {
      for (const Membership& m : *ms) p.projects[m.project] = *auth::parseRole(m.role);
    }
    p.token_project = std::move(token_project);
    return p;
  }

  Reply call(const Principal& who, const std::string& method, const std::string& target,
             const Json& body = nullptr) {
    return callRaw(who, method, target, body.is_null() ? "" : body.dump());
  }

  Reply callRaw(const Principal& who, const std::string& method, const std::string& target,
                const std::string& body) {
    httplib::Request req;
    req.method = method;
    auto q = target.find('?');
    req.path = target.substr(0, q);
    if (q != std::string::npos) httplib::detail::parse_query_text(target.substr(q + 1), req.params);
    req.body = body;
    if (!body.empty()) req.set_header("Content-Type", "application/json");
    const Route* route = nullptr;
    for (const Route& r : routes_) {
      if (r.doc.method == method &&
          std::regex_match(req.path, req.matches, std::regex(routeRegex(r.doc.path)))) {
        route = &r;
        break;
      }
    }
    Reply reply;
    if (!route) {
      ADD_FAILURE() << "no route for " << method << " " << req.path;
      return reply;
    }
    Caller caller;
    caller.principal = who;
    caller.address = "192.0.2.1";
    caller.via = Caller::Via::kToken;
    caller.token.id = 99;
    caller.token.name = "test";
    caller.token.project = who.token_project.value_or("");
    httplib::Response res;
    Status gate = route->access.kind == Access::Kind::kFixed
                      ? caller.allow(route->access.permission, {}, "")
                      : Status::ok();
    if (!gate.isOk()) {
      writeError(res, gate);
    } else {
      route->handler(req, res, caller);
      if (route->access.kind == Access::Kind::kResource && res.status < 300) {
        EXPECT_TRUE(caller.checked) << method << " " << target << " succeeded without allow()";
      }
    }
    reply.status = res.status;
    reply.raw = res.body;
    reply.audit_detail = caller.audit_detail;
    if (!res.body.empty()) reply.body = Json::parse(res.body);
    expectNoSecrets(reply);
    return reply;
  }

  // No answer and no audit detail ever carries a stored hash, a password
  // or a token secret the test handed in.
  void expectNoSecrets(const Reply& reply) {
    std::vector<std::string> secrets = secrets_;
    auto users = store_.listUsers();
    ASSERT_TRUE(users.isOk());
    for (const User& u : *users) {
      if (!u.password_hash.empty()) secrets.push_back(u.password_hash);
      auto tokens = store_.tokensOfUser(u.name);
      ASSERT_TRUE(tokens.isOk());
      for (const ApiToken& t : *tokens) secrets.push_back(t.hash);
    }
    for (const std::string& s : secrets) {
      EXPECT_EQ(reply.raw.find(s), std::string::npos) << "answer leaks " << s << ": " << reply.raw;
      EXPECT_EQ(reply.audit_detail.find(s), std::string::npos) << "audit leaks " << s;
    }
  }

  Json user(const std::string& name, bool admin = false) {
    return {{"name", name}, {"admin", admin}};
  }

  MemoryStore store_;
  ManualClock clock_{kStart};
  IdentityContext ctx_;
  std::vector<Route> routes_;
  std::vector<std::string> secrets_;  // passwords the test used
};

TEST_F(IdentityRoutesTest, RouteTableIsValidAndDeclaresPermissions) {
  EXPECT_TRUE(validateRoutes(routes_).isOk());
  std::map<std::string, Access> access;
  for (const Route& r : routes_) access[r.doc.method + " " + r.doc.path] = r.access;
  auto expect = [&](const std::string& route, Access::Kind kind, auth::Permission p) {
    ASSERT_TRUE(access.contains(route)) << route;
    EXPECT_EQ(access[route].kind, kind) << route;
    EXPECT_EQ(access[route].permission, p) << route;
  };
  using K = Access::Kind;
  using P = auth::Permission;
  expect("GET /api/v1/whoami", K::kFixed, P::kWhoami);
  expect("GET /api/v1/users", K::kFixed, P::kManageUsers);
  expect("POST /api/v1/users", K::kFixed, P::kManageUsers);
  expect("GET /api/v1/users/{name}", K::kResource, P::kManageUsers);
  expect("PATCH /api/v1/users/{name}", K::kFixed, P::kManageUsers);
  expect("PUT /api/v1/users/{name}/password", K::kResource, P::kManageUsers);
  expect("GET /api/v1/projects", K::kFixed, P::kWhoami);
  expect("POST /api/v1/projects", K::kFixed, P::kManageProjects);
  expect("DELETE /api/v1/projects/{p}", K::kFixed, P::kManageProjects);
  expect("PATCH /api/v1/projects/{p}", K::kResource, P::kManageMembers);
  expect("GET /api/v1/projects/{p}/members", K::kResource, P::kReadJobs);
  expect("PUT /api/v1/projects/{p}/members/{user}", K::kResource, P::kManageMembers);
  expect("DELETE /api/v1/projects/{p}/members/{user}", K::kResource, P::kManageMembers);
  expect("GET /api/v1/tokens", K::kResource, P::kManageTokens);
  expect("POST /api/v1/tokens", K::kResource, P::kManageTokens);
  expect("DELETE /api/v1/tokens/{id}", K::kResource, P::kManageTokens);
  expect("GET /api/v1/audit", K::kFixed, P::kReadAudit);
  EXPECT_EQ(access.size(), 17u);
}

TEST_F(IdentityRoutesTest, WhoamiShowsRolesAndCredential) {
  Reply r = call(principal("bob", "vision"), "GET", "/api/v1/whoami");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["user"], "bob");
  EXPECT_EQ(r.body["admin"], false);
  ASSERT_EQ(r.body["projects"].size(), 2u);
  EXPECT_EQ(r.body["projects"][0], (Json{{"project", "nlp"}, {"role", "viewer"}}));
  EXPECT_EQ(r.body["projects"][1], (Json{{"project", "vision"}, {"role", "engineer"}}));
  EXPECT_EQ(r.body["auth"]["kind"], "token");
  EXPECT_EQ(r.body["auth"]["token_id"], 99);
  EXPECT_EQ(r.body["auth"]["token_name"], "test");
  EXPECT_EQ(r.body["auth"]["project"], "vision");
  EXPECT_EQ(r.body["auth"]["expires_at"], 0);

  r = call(principal("root"), "GET", "/api/v1/whoami");
  EXPECT_EQ(r.body["admin"], true);
  EXPECT_TRUE(r.body["auth"]["project"].is_null());
}

TEST_F(IdentityRoutesTest, WhoamiGivesTheCsrfTokenOnlyToASession) {
  const Route* whoami = nullptr;
  for (const Route& r : routes_) {
    if (r.doc.method == "GET" && r.doc.path == "/api/v1/whoami") whoami = &r;
  }
  ASSERT_NE(whoami, nullptr);
  auto answer = [&](Caller::Via via, const std::string& csrf) {
    Caller caller;
    caller.principal = principal("bob");
    caller.via = via;
    caller.csrf = csrf;
    caller.token.id = 7;
    caller.token.name = "web session";
    httplib::Response res;
    whoami->handler(httplib::Request(), res, caller);
    EXPECT_EQ(res.status, 200) << res.body;
    return Json::parse(res.body);
  };
  // The gateway sets Caller::csrf from the session's secret.
  Json session = answer(Caller::Via::kSession, Gateway::csrfToken("secret"));
  EXPECT_EQ(session["auth"]["kind"], "session");
  EXPECT_EQ(session["csrf_token"], Gateway::csrfToken("secret"));
  EXPECT_FALSE(answer(Caller::Via::kToken, "").contains("csrf_token"));
  // Never for a caller that is not a session, whatever it carries.
  EXPECT_FALSE(answer(Caller::Via::kToken, "stray").contains("csrf_token"));
}

TEST_F(IdentityRoutesTest, AdminCreatesAndListsUsers) {
  secrets_.push_back("correct horse");
  Reply r = call(principal("root"), "POST", "/api/v1/users",
                 {{"name", "carol"}, {"password", "correct horse"}});
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body, (Json{{"name", "carol"},
                          {"admin", false},
                          {"disabled", false},
                          {"has_password", true},
                          {"created_at", kStart},
                          {"locked_until", 0}}));
  EXPECT_EQ(r.audit_detail, "created user carol");
  auto stored = store_.getUser("carol");
  ASSERT_TRUE(stored.isOk());
  EXPECT_TRUE(auth::verifyPassword(stored->password_hash, "correct horse"));

  r = call(principal("root"), "POST", "/api/v1/users", user("dave", true));
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["has_password"], false);
  EXPECT_EQ(r.audit_detail, "created user dave (admin)");

  r = call(principal("root"), "GET", "/api/v1/users");
  ASSERT_EQ(r.status, 200);
  std::vector<std::string> names;
  for (const Json& u : r.body["users"]) names.push_back(u["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"alice", "bob", "carol", "dave", "root"}));

  EXPECT_EQ(call(principal("root"), "POST", "/api/v1/users", user("carol")).status, 409);
  EXPECT_EQ(call(principal("alice"), "GET", "/api/v1/users").status, 403);
  EXPECT_EQ(call(principal("alice"), "POST", "/api/v1/users", user("eve")).status, 403);
  // An admin acting through a project-scoped token has no global rights.
  EXPECT_EQ(call(principal("root", "vision"), "GET", "/api/v1/users").status, 403);
}

TEST_F(IdentityRoutesTest, CreateUserValidatesFields) {
  Principal root = principal("root");
  Reply r = call(root, "POST", "/api/v1/users", user("Bad Name"));
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "name");
  r = call(root, "POST", "/api/v1/users", Json{{"admin", true}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "name");
  r = call(root, "POST", "/api/v1/users", Json{{"name", "eve"}, {"role", "admin"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "role");
  r = call(root, "POST", "/api/v1/users", Json{{"name", "eve"}, {"admin", "yes"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "admin");
  r = call(root, "POST", "/api/v1/users", Json{{"name", "eve"}, {"password", ""}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "password");
  r = call(root, "POST", "/api/v1/users", Json{{"name", std::string(65, 'a')}});
  EXPECT_EQ(r.field(), "name");
  // A malformed body must not echo the password the parser stopped in.
  r = callRaw(root, "POST", "/api/v1/users", R"({"name":"eve","password":"s3cret)");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.raw.find("s3cret"), std::string::npos) << r.raw;
  EXPECT_FALSE(store_.getUser("eve").isOk());
}

TEST_F(IdentityRoutesTest, GetUserSelfOrAdmin) {
  Reply r = call(principal("bob"), "GET", "/api/v1/users/bob");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["name"], "bob");
  EXPECT_EQ(r.body["projects"], (Json::array({{{"project", "nlp"}, {"role", "viewer"}},
                                              {{"project", "vision"}, {"role", "engineer"}}})));
  // Self works through a project-scoped token too: it is one's own identity.
  EXPECT_EQ(call(principal("bob", "nlp"), "GET", "/api/v1/users/bob").status, 200);

  r = call(principal("bob"), "GET", "/api/v1/users/alice");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.code(), "permission_denied");
  // Others cannot learn whether a name exists: 403 either way.
  EXPECT_EQ(call(principal("bob"), "GET", "/api/v1/users/nobody").status, 403);

  EXPECT_EQ(call(principal("root"), "GET", "/api/v1/users/alice").status, 200);
  r = call(principal("root"), "GET", "/api/v1/users/nobody");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.message(), "no such user");
}

TEST_F(IdentityRoutesTest, PatchUserDisablesAndGrantsAdmin) {
  Principal root = principal("root");
  Reply r = call(root, "PATCH", "/api/v1/users/alice", Json{{"disabled", true}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["disabled"], true);
  EXPECT_EQ(r.audit_detail, "disabled user alice");
  // The row stays, memberships too: disabling is reversible.
  ASSERT_TRUE(store_.getUser("alice").isOk());
  EXPECT_TRUE(store_.getUser("alice")->disabled);
  EXPECT_EQ(store_.membershipsOfUser("alice")->size(), 1u);

  r = call(root, "PATCH", "/api/v1/users/alice", Json{{"disabled", false}, {"admin", true}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["admin"], true);
  EXPECT_EQ(r.body["disabled"], false);
  EXPECT_EQ(r.audit_detail, "made alice an admin; enabled user alice");

  // The last admin must not lock everyone out.
  r = call(root, "PATCH", "/api/v1/users/root", Json{{"disabled", true}});
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.code(), "failed_precondition");
  EXPECT_EQ(call(root, "PATCH", "/api/v1/users/root", Json{{"admin", false}}).status, 409);
  EXPECT_FALSE(store_.getUser("root")->disabled);
  EXPECT_TRUE(store_.getUser("root")->is_admin);
  // Another admin may.
  EXPECT_EQ(call(principal("alice"), "PATCH", "/api/v1/users/root", Json{{"admin", false}}).status,
            200);

  EXPECT_EQ(call(root, "PATCH", "/api/v1/users/nobody", Json{{"admin", true}}).status, 404);
  r = call(root, "PATCH", "/api/v1/users/bob", Json::object());
  EXPECT_EQ(r.status, 400);
  r = call(root, "PATCH", "/api/v1/users/bob", Json{{"name", "robert"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "name");
  EXPECT_EQ(call(principal("bob"), "PATCH", "/api/v1/users/bob", Json{{"admin", true}}).status,
            403);
}

TEST_F(IdentityRoutesTest, PasswordSetAndChange) {
  secrets_ = {"first-pass", "second-pass", "admin-reset", "wrong-pass"};
  // No password yet: the user sets one without a current one.
  Reply r = call(principal("alice"), "PUT", "/api/v1/users/alice/password",
                 Json{{"password", "first-pass"}});
  ASSERT_EQ(r.status, 204) << r.raw;
  EXPECT_EQ(r.audit_detail, "changed own password");
  EXPECT_TRUE(auth::verifyPassword(store_.getUser("alice")->password_hash, "first-pass"));

  // Now the current one is required, and must be right.
  r = call(principal("alice"), "PUT", "/api/v1/users/alice/password",
           Json{{"password", "second-pass"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "current_password");
  r = call(principal("alice"), "PUT", "/api/v1/users/alice/password",
           Json{{"password", "second-pass"}, {"current_password", "wrong-pass"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(r.code(), "permission_denied");
  EXPECT_TRUE(auth::verifyPassword(store_.getUser("alice")->password_hash, "first-pass"));
  r = call(principal("alice"), "PUT", "/api/v1/users/alice/password",
           Json{{"password", "second-pass"}, {"current_password", "first-pass"}});
  EXPECT_EQ(r.status, 204);
  EXPECT_TRUE(auth::verifyPassword(store_.getUser("alice")->password_hash, "second-pass"));

  // An admin resets another user's password without it, which also ends a
  // lockout.
  UserChange lock;
  lock.locked_until = kStart + kDay;
  ASSERT_TRUE(store_.updateUser("alice", lock).isOk());
  r = call(principal("root"), "PUT", "/api/v1/users/alice/password",
           Json{{"password", "admin-reset"}});
  EXPECT_EQ(r.status, 204) << r.raw;
  EXPECT_EQ(r.audit_detail, "set password of alice");
  User after = *store_.getUser("alice");
  EXPECT_TRUE(auth::verifyPassword(after.password_hash, "admin-reset"));
  EXPECT_EQ(after.failed_logins, 0);
  EXPECT_EQ(after.locked_until, 0);

  // Others: 403; unknown users for admins: 404; bad bodies: 400.
  EXPECT_EQ(
      call(principal("bob"), "PUT", "/api/v1/users/alice/password", Json{{"password", "x"}}).status,
      403);
  EXPECT_EQ(call(principal("root"), "PUT", "/api/v1/users/nobody/password", Json{{"password", "x"}})
                .status,
            404);
  r = call(principal("root"), "PUT", "/api/v1/users/bob/password", Json{{"password", ""}});
  EXPECT_EQ(r.field(), "password");
  r = call(principal("root"), "PUT", "/api/v1/users/bob/password",
           Json{{"password", "x"}, {"pasword", "y"}});
  EXPECT_EQ(r.field(), "pasword");
  // A project-scoped token is no way to a password that signs in unscoped.
  r = call(principal("bob", "vision"), "PUT", "/api/v1/users/bob/password",
           Json{{"password", "x"}});
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(store_.getUser("bob")->password_hash.empty());
}

TEST_F(IdentityRoutesTest, ProjectsListedByMembership) {
  ASSERT_TRUE(store_.createProject({"speech", kStart}).isOk());
  Reply r = call(principal("bob"), "GET", "/api/v1/projects");
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(r.body["projects"],
            (Json::array({{{"name", "nlp"}, {"created_at", kStart}, {"role", "viewer"}},
                          {{"name", "vision"}, {"created_at", kStart}, {"role", "engineer"}}})));
  r = call(principal("root"), "GET", "/api/v1/projects");
  ASSERT_EQ(r.body["projects"].size(), 3u);
  EXPECT_TRUE(r.body["projects"][1]["role"].is_null());
  r = call(principal("bob", "nlp"), "GET", "/api/v1/projects");
  ASSERT_EQ(r.body["projects"].size(), 1u);
  EXPECT_EQ(r.body["projects"][0]["name"], "nlp");
  EXPECT_EQ(call(principal("alice"), "GET", "/api/v1/projects").body["projects"].size(), 1u);
}

TEST_F(IdentityRoutesTest, CreateAndDeleteProjects) {
  Principal root = principal("root");
  clock_.advance(1000);
  Reply r = call(root, "POST", "/api/v1/projects", Json{{"name", "speech"}});
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body, (Json{{"name", "speech"}, {"created_at", kStart + 1000}}));
  EXPECT_EQ(r.audit_detail, "created project speech");
  EXPECT_EQ(call(root, "POST", "/api/v1/projects", Json{{"name", "speech"}}).status, 409);
  EXPECT_EQ(call(root, "POST", "/api/v1/projects", Json{{"name", "Speech!"}}).field(), "name");
  EXPECT_EQ(call(principal("alice"), "POST", "/api/v1/projects", Json{{"name", "x"}}).status, 403);

  // A project with unfinished jobs stays.
  std::vector<Job> jobs(3);
  for (Job& j : jobs) {
    j.spec.project = "speech";
    j.user = "alice";
  }
  jobs[0].state = JobState::kRunning;
  jobs[1].state = JobState::kPending;
  jobs[2].state = JobState::kSucceeded;
  ASSERT_TRUE(store_.createJobs(jobs, {}).isOk());
  r = call(root, "DELETE", "/api/v1/projects/speech");
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.code(), "failed_precondition");
  EXPECT_NE(r.message().find("2 unfinished jobs"), std::string::npos) << r.message();
  EXPECT_NE(r.message().find(std::to_string(jobs[0].id.value()) + " (running)"), std::string::npos)
      << r.message();
  EXPECT_TRUE(store_.getProject("speech").isOk());

  for (Job& j : jobs) j.state = JobState::kCancelled;
  WriteBatch batch;
  batch.jobs = jobs;
  ASSERT_TRUE(store_.apply(batch).isOk());
  r = call(root, "DELETE", "/api/v1/projects/speech");
  EXPECT_EQ(r.status, 204) << r.raw;
  EXPECT_EQ(r.audit_detail, "deleted project speech");
  EXPECT_FALSE(store_.getProject("speech").isOk());
  r = call(root, "DELETE", "/api/v1/projects/speech");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.message(), "no such project");
  EXPECT_EQ(call(principal("alice"), "DELETE", "/api/v1/projects/vision").status, 403);
}

TEST_F(IdentityRoutesTest, MembersHiddenFromOtherProjects) {
  Reply r = call(principal("bob"), "GET", "/api/v1/projects/vision/members");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["members"], (Json::array({{{"user", "alice"}, {"role", "admin"}},
                                             {{"user", "bob"}, {"role", "engineer"}}})));

  // alice is not in nlp: it reads exactly like a project that does not exist.
  Reply hidden = call(principal("alice"), "GET", "/api/v1/projects/nlp/members");
  Reply missing = call(principal("alice"), "GET", "/api/v1/projects/nope/members");
  EXPECT_EQ(hidden.status, 404);
  EXPECT_EQ(hidden.raw, missing.raw);
  EXPECT_EQ(hidden.message(), "no such project");
  // A token scoped to nlp cannot see vision either.
  EXPECT_EQ(call(principal("bob", "nlp"), "GET", "/api/v1/projects/vision/members").status, 404);
  // Admins see everything; a missing project is still 404 for them.
  EXPECT_EQ(call(principal("root"), "GET", "/api/v1/projects/nlp/members").status, 200);
  EXPECT_EQ(call(principal("root"), "GET", "/api/v1/projects/nope/members").status, 404);
}

TEST_F(IdentityRoutesTest, ProjectAdminsSetTheWebhook) {
  // alice administers vision; bob is an engineer there.
  const std::string url = "https://hooks.example.org/vision?k=1";
  Reply r =
      call(principal("alice"), "PATCH", "/api/v1/projects/vision", Json{{"webhook_url", url}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, (Json{{"name", "vision"}, {"created_at", kStart}, {"webhook_url", url}}));
  EXPECT_EQ(r.audit_detail, "set webhook of project vision");  // never the URL
  EXPECT_EQ(store_.getProject("vision").value().webhook_url, url);
  // Only those who may change it see it in the list.
  r = call(principal("alice"), "GET", "/api/v1/projects");
  EXPECT_EQ(r.body["projects"][0]["webhook_url"], url) << r.raw;
  r = call(principal("bob"), "GET", "/api/v1/projects");
  EXPECT_FALSE(r.body["projects"][1].contains("webhook_url")) << r.raw;

  EXPECT_EQ(
      call(principal("bob"), "PATCH", "/api/v1/projects/vision", Json{{"webhook_url", url}}).status,
      403);
  EXPECT_EQ(
      call(principal("alice"), "PATCH", "/api/v1/projects/nlp", Json{{"webhook_url", url}}).status,
      404);
  r = call(principal("alice"), "PATCH", "/api/v1/projects/vision",
           Json{{"webhook_url", "ftp://x.example/"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "webhook_url");
  EXPECT_EQ(call(principal("alice"), "PATCH", "/api/v1/projects/vision", Json::object()).field(),
            "webhook_url");
  EXPECT_EQ(
      call(principal("alice"), "PATCH", "/api/v1/projects/vision", Json{{"name", "x"}}).status,
      400);

  r = call(principal("alice"), "PATCH", "/api/v1/projects/vision", Json{{"webhook_url", nullptr}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["webhook_url"], "");
  EXPECT_EQ(r.audit_detail, "cleared webhook of project vision");
  EXPECT_EQ(store_.getProject("vision").value().webhook_url, "");
}

TEST_F(IdentityRoutesTest, ProjectAdminsManageMembers) {
  // alice administers vision.
  Reply r = call(principal("alice"), "PUT", "/api/v1/projects/vision/members/bob",
                 Json{{"role", "viewer"}});
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body, (Json{{"user", "bob"}, {"project", "vision"}, {"role", "viewer"}}));
  EXPECT_EQ(r.audit_detail, "gave bob role viewer in project vision");
  EXPECT_EQ(principal("bob").projects.at("vision"), Role::kViewer);

  r = call(principal("alice"), "PUT", "/api/v1/projects/vision/members/bob",
           Json{{"role", "owner"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.field(), "role");
  r = call(principal("alice"), "PUT", "/api/v1/projects/vision/members/bob", Json::object());
  EXPECT_EQ(r.field(), "role");
  r = call(principal("alice"), "PUT", "/api/v1/projects/vision/members/nobody",
           Json{{"role", "viewer"}});
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.message(), "no such user");

  // bob is an engineer in vision: visible, not allowed.
  r = call(principal("bob"), "DELETE", "/api/v1/projects/vision/members/alice");
  EXPECT_EQ(r.status, 403);
  // alice has no role in nlp: hidden, like a missing project.
  Reply hidden = call(principal("alice"), "PUT", "/api/v1/projects/nlp/members/alice",
                      Json{{"role", "admin"}});
  Reply missing = call(principal("alice"), "PUT", "/api/v1/projects/nope/members/alice",
                       Json{{"role", "admin"}});
  EXPECT_EQ(hidden.status, 404);
  EXPECT_EQ(hidden.raw, missing.raw);
  EXPECT_EQ(call(principal("alice"), "DELETE", "/api/v1/projects/nlp/members/bob").status, 404);
  EXPECT_FALSE(principal("alice").projects.contains("nlp"));

  r = call(principal("alice"), "DELETE", "/api/v1/projects/vision/members/bob");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.audit_detail, "removed bob from project vision");
  EXPECT_FALSE(principal("bob").projects.contains("vision"));
  EXPECT_EQ(call(principal("alice"), "DELETE", "/api/v1/projects/vision/members/bob").status, 404);
  // Global admins manage any project's members.
  EXPECT_EQ(call(principal("root"), "PUT", "/api/v1/projects/nlp/members/alice",
                 Json{{"role", "data-engineer"}})
                .status,
            200);
}

TEST_F(IdentityRoutesTest, CreateTokenShowsSecretOnce) {
  clock_.advance(5000);
  Reply r = call(principal("bob"), "POST", "/api/v1/tokens",
                 Json{{"name", "laptop"}, {"expires_in", "30d"}});
  ASSERT_EQ(r.status, 201) << r.raw;
  std::string secret = r.body["token"];
  EXPECT_TRUE(auth::looksLikeToken(secret));
  EXPECT_EQ(r.body["user"], "bob");
  EXPECT_EQ(r.body["name"], "laptop");
  EXPECT_EQ(r.body["prefix"], auth::displayPrefix(secret));
  EXPECT_EQ(r.body["prefix"].get<std::string>().size(), auth::kDisplayPrefixLength);
  EXPECT_TRUE(r.body["project"].is_null());
  EXPECT_EQ(r.body["created_at"], kStart + 5000);
  EXPECT_EQ(r.body["expires_at"], kStart + 5000 + 30 * kDay);
  EXPECT_TRUE(r.body["revoked_at"].is_null());
  EXPECT_TRUE(r.body["last_used_at"].is_null());
  EXPECT_EQ(r.body["live"], true);
  EXPECT_EQ(r.audit_detail,
            "created token " + std::to_string(r.body["id"].get<int>()) + " (laptop) for bob");

  // The store has the hash, not the secret; the secret finds the token.
  auto found = store_.findTokenByHash(auth::tokenHash(secret), clock_.now());
  ASSERT_TRUE(found.isOk() && found->has_value());
  EXPECT_EQ((*found)->id, r.body["id"]);
  EXPECT_NE((*found)->hash, secret);
  secrets_.push_back(secret);  // from here on no answer may show it

  r = call(principal("bob"), "GET", "/api/v1/tokens");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body["tokens"].size(), 1u);
  EXPECT_FALSE(r.body["tokens"][0].contains("token"));
  EXPECT_FALSE(r.body["tokens"][0].contains("hash"));
}

TEST_F(IdentityRoutesTest, CreateTokenValidates) {
  Principal bob = principal("bob");
  Reply r = call(bob, "POST", "/api/v1/tokens", Json::object());
  EXPECT_EQ(r.field(), "name");
  EXPECT_EQ(call(bob, "POST", "/api/v1/tokens", Json{{"name", ""}}).field(), "name");
  EXPECT_EQ(call(bob, "POST", "/api/v1/tokens", Json{{"name", std::string(65, 'x')}}).field(),
            "name");
  EXPECT_EQ(call(bob, "POST", "/api/v1/tokens", Json{{"name", "tab\there"}}).field(), "name");
  EXPECT_EQ(call(bob, "POST", "/api/v1/tokens", Json{{"name", "ci"}, {"scope", "x"}}).field(),
            "scope");
  EXPECT_EQ(
      call(bob, "POST", "/api/v1/tokens", Json{{"name", "ci"}, {"expires_in", "soon"}}).field(),
      "expires_in");
  EXPECT_EQ(call(bob, "POST", "/api/v1/tokens", Json{{"name", "My CI #1"}}).status, 201);
  EXPECT_EQ(call(bob, "POST", "/api/v1/tokens", Json{{"name", "ci"}}).body["expires_at"], nullptr);
}

TEST_F(IdentityRoutesTest, ExpiresInForms) {
  auto ms = [](const Json& v) {
    auto r = parseExpiresIn(v);
    return r.isOk() ? *r : -1;
  };
  EXPECT_EQ(ms("30d"), 30 * kDay);
  EXPECT_EQ(ms("12h"), 12 * 3'600'000);
  EXPECT_EQ(ms("90m"), 90 * 60'000);
  EXPECT_EQ(ms("45s"), 45'000);
  EXPECT_EQ(ms(3600), 3'600'000);
  EXPECT_EQ(ms(Json::parse("3600")), 3'600'000);  // parsed: unsigned
  EXPECT_EQ(ms(Json::parse("18446744073709551615")), -1);
  EXPECT_EQ(ms(Json::parse("-3600")), -1);
  EXPECT_EQ(ms("3600"), 3'600'000);
  EXPECT_EQ(ms("366d"), 366 * kDay);
  EXPECT_EQ(ms(366 * 86400), 366 * kDay);
  for (const Json& bad :
       {Json("367d"), Json(366 * 86400 + 1), Json("0"), Json(0), Json(-5), Json("-5s"),
        Json("1.5h"), Json(1.5), Json(""), Json("d"), Json("12hh"), Json("1h30m"), Json("1w"),
        Json(" 5s"), Json("5 s"), Json(true), Json::array({1}), Json("9999999999999999999d")}) {
    auto r = parseExpiresIn(bad, "ttl");
    EXPECT_FALSE(r.isOk()) << bad.dump();
    EXPECT_EQ(r.status().field(), "ttl") << bad.dump();
  }
}

TEST_F(IdentityRoutesTest, TokenListsOwnOrAnyoneForAdmins) {
  ASSERT_EQ(call(principal("alice"), "POST", "/api/v1/tokens", Json{{"name", "a1"}}).status, 201);
  ASSERT_EQ(call(principal("bob"), "POST", "/api/v1/tokens", Json{{"name", "b1"}}).status, 201);
  // An admin makes a token for someone else.
  Reply r = call(principal("root"), "POST", "/api/v1/tokens",
                 Json{{"name", "b2"}, {"user", "bob"}, {"project", "nlp"}});
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["user"], "bob");
  EXPECT_EQ(r.body["project"], "nlp");
  EXPECT_EQ(r.audit_detail, "created token " + std::to_string(r.body["id"].get<int>()) +
                                " (b2) for bob in project nlp");

  r = call(principal("bob"), "GET", "/api/v1/tokens");
  ASSERT_EQ(r.body["tokens"].size(), 2u);
  EXPECT_EQ(r.body["tokens"][0]["name"], "b1");
  EXPECT_EQ(r.body["tokens"][1]["name"], "b2");
  EXPECT_EQ(call(principal("bob"), "GET", "/api/v1/tokens?user=bob").body["tokens"].size(), 2u);
  r = call(principal("root"), "GET", "/api/v1/tokens?user=alice");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(r.body["tokens"].size(), 1u);
  EXPECT_EQ(r.body["tokens"][0]["name"], "a1");
  EXPECT_EQ(call(principal("root"), "GET", "/api/v1/tokens").body["tokens"].size(), 0u);
  EXPECT_EQ(call(principal("root"), "GET", "/api/v1/tokens?user=nobody").status, 404);

  // Non-admins: only their own.
  r = call(principal("bob"), "GET", "/api/v1/tokens?user=alice");
  EXPECT_EQ(r.status, 403);
  EXPECT_EQ(call(principal("bob"), "POST", "/api/v1/tokens", Json{{"name", "x"}, {"user", "alice"}})
                .status,
            403);
  EXPECT_EQ(call(principal("bob"), "GET", "/api/v1/tokens?user=Bad!").field(), "user");
}

TEST_F(IdentityRoutesTest, RevokeOwnOrAsAdmin) {
  Reply a = call(principal("alice"), "POST", "/api/v1/tokens", Json{{"name", "a1"}});
  Reply b = call(principal("bob"), "POST", "/api/v1/tokens", Json{{"name", "b1"}});
  ASSERT_EQ(a.status, 201);
  ASSERT_EQ(b.status, 201);
  std::string a_id = std::to_string(a.body["id"].get<int>());
  std::string b_id = std::to_string(b.body["id"].get<int>());

  // Someone else's token id reads as unknown, and stays live.
  Reply r = call(principal("bob"), "DELETE", "/api/v1/tokens/" + a_id);
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.message(), "no such token");
  EXPECT_EQ(call(principal("bob"), "DELETE", "/api/v1/tokens/" + a_id + "?user=alice").status, 403);
  EXPECT_EQ(call(principal("bob"), "DELETE", "/api/v1/tokens/12345").status, 404);
  EXPECT_TRUE(store_.tokensOfUser("alice")->at(0).live(clock_.now()));

  clock_.advance(10);
  r = call(principal("bob"), "DELETE", "/api/v1/tokens/" + b_id);
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.audit_detail, "revoked token " + b_id + " of bob");
  r = call(principal("bob"), "GET", "/api/v1/tokens");
  EXPECT_EQ(r.body["tokens"][0]["revoked_at"], kStart + 10);
  EXPECT_EQ(r.body["tokens"][0]["live"], false);

  // Admins name the owner.
  EXPECT_EQ(call(principal("root"), "DELETE", "/api/v1/tokens/" + a_id).status, 404);
  r = call(principal("root"), "DELETE", "/api/v1/tokens/" + a_id + "?user=alice");
  EXPECT_EQ(r.status, 204);
  EXPECT_EQ(r.audit_detail, "revoked token " + a_id + " of alice");
  EXPECT_FALSE(store_.tokensOfUser("alice")->at(0).live(clock_.now()));
}

TEST_F(IdentityRoutesTest, ProjectScopedTokenLimits) {
  // A project token for a project the user is in.
  Reply r =
      call(principal("bob"), "POST", "/api/v1/tokens", Json{{"name", "ci"}, {"project", "vision"}});
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(r.body["project"], "vision");
  // Not in it, or no such project: the same 404.
  Reply hidden =
      call(principal("alice"), "POST", "/api/v1/tokens", Json{{"name", "ci"}, {"project", "nlp"}});
  Reply missing =
      call(principal("alice"), "POST", "/api/v1/tokens", Json{{"name", "ci"}, {"project", "nope"}});
  EXPECT_EQ(hidden.status, 404);
  EXPECT_EQ(hidden.raw, missing.raw);
  // Admins get the plain reason when they ask for someone else.
  r = call(principal("root"), "POST", "/api/v1/tokens",
           Json{{"name", "ci"}, {"project", "nlp"}, {"user", "alice"}});
  EXPECT_EQ(r.status, 409);
  EXPECT_EQ(r.message(), "user alice is not a member of project nlp");
  EXPECT_EQ(
      call(principal("root"), "POST", "/api/v1/tokens", Json{{"name", "ci"}, {"project", "nope"}})
          .status,
      404);
  // Admins need no membership for their own project tokens.
  EXPECT_EQ(
      call(principal("root"), "POST", "/api/v1/tokens", Json{{"name", "ci"}, {"project", "nlp"}})
          .status,
      201);

  // Through a project-scoped token no token can be made, listed or revoked:
  // managing tokens is a global permission.
  size_t before = store_.tokensOfUser("bob")->size();
  for (const char* project : {"vision", "nlp"}) {
    r = call(principal("bob", "vision"), "POST", "/api/v1/tokens",
             Json{{"name", "more"}, {"project", project}});
    EXPECT_EQ(r.status, 403) << project;
  }
  EXPECT_EQ(
      call(principal("bob", "vision"), "POST", "/api/v1/tokens", Json{{"name", "more"}}).status,
      403);
  EXPECT_EQ(call(principal("bob", "vision"), "GET", "/api/v1/tokens").status, 403);
  EXPECT_EQ(call(principal("root", "vision"), "POST", "/api/v1/tokens", Json{{"name", "x"}}).status,
            403);
  EXPECT_EQ(store_.tokensOfUser("bob")->size(), before);
}

TEST_F(IdentityRoutesTest, IssueTokenChecks) {
  auto issued = issueToken(store_, kStart, tokenSpec("bob", "cli"));
  ASSERT_TRUE(issued.isOk());
  EXPECT_TRUE(auth::looksLikeToken(issued->secret));
  EXPECT_EQ(issued->token.hash, auth::tokenHash(issued->secret));
  EXPECT_EQ(issued->token.prefix, auth::displayPrefix(issued->secret));
  EXPECT_EQ(issued->token.created_at, kStart);
  EXPECT_GT(issued->token.id, 0);

  auto r = issueToken(store_, kStart, tokenSpec("nobody", "cli"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  r = issueToken(store_, kStart, tokenSpec("bob", "cli", "nope"));
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  r = issueToken(store_, kStart, tokenSpec("alice", "cli", "nlp"));
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  r = issueToken(store_, kStart, tokenSpec("bob", ""));
  EXPECT_EQ(r.status().field(), "name");
  r = issueToken(store_, kStart, tokenSpec("bob", "old", "", kStart));
  EXPECT_EQ(r.status().field(), "expires_at");
}

TEST_F(IdentityRoutesTest, AuditPages) {
  for (int i = 0; i < 5; ++i) {
    AuditRecord rec{.at = kStart + i,
                    .user = i % 2 ? "alice" : "bob",
                    .address = "192.0.2.7",
                    .method = "POST",
                    .path = "/api/v1/jobs",
                    .status = 201,
                    .detail = "job " + std::to_string(i)};
    ASSERT_TRUE(store_.appendAudit(rec).isOk());
  }
  Principal root = principal("root");
  Reply r = call(root, "GET", "/api/v1/audit?limit=2");
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["records"].size(), 2u);
  EXPECT_EQ(r.body["records"][0], (Json{{"seq", 5},
                                        {"at", kStart + 4},
                                        {"user", "bob"},
                                        {"address", "192.0.2.7"},
                                        {"method", "POST"},
                                        {"path", "/api/v1/jobs"},
                                        {"status", 201},
                                        {"detail", "job 4"}}));
  EXPECT_EQ(r.body["records"][1]["seq"], 4);
  EXPECT_EQ(r.body["next_before"], 4);
  r = call(root, "GET", "/api/v1/audit?limit=2&before=4");
  EXPECT_EQ(r.body["records"][0]["seq"], 3);
  EXPECT_EQ(r.body["records"][1]["seq"], 2);
  r = call(root, "GET", "/api/v1/audit?limit=2&before=2");
  ASSERT_EQ(r.body["records"].size(), 1u);
  EXPECT_TRUE(r.body["next_before"].is_null());

  r = call(root, "GET", "/api/v1/audit?user=alice");
  ASSERT_EQ(r.body["records"].size(), 2u);
  EXPECT_EQ(r.body["records"][0]["seq"], 4);
  EXPECT_TRUE(r.body["next_before"].is_null());

  EXPECT_EQ(call(root, "GET", "/api/v1/audit?limit=0").field(), "limit");
  EXPECT_EQ(call(root, "GET", "/api/v1/audit?limit=1001").field(), "limit");
  EXPECT_EQ(call(root, "GET", "/api/v1/audit?before=-1").field(), "before");
  EXPECT_EQ(call(root, "GET", "/api/v1/audit?user=A%20B").field(), "user");
  EXPECT_EQ(call(principal("alice"), "GET", "/api/v1/audit").status, 403);
}

}  // namespace
}  // namespace ty
