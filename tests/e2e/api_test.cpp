// The REST API over real HTTP: error shapes and codes, listing, and the
// OpenAPI document against the routes the server really serves.
#include <optional>
#include <set>

#include "harness.h"

namespace ty::e2e {
namespace {

class ApiTest : public E2eTest {};

// Checks the one error shape and returns the error object.
Json errorOf(const HttpResult& r) {
  EXPECT_TRUE(r.json.is_object() && r.json.contains("error") && r.json["error"].is_object())
      << "not an error document: HTTP " << r.status << " " << r.body;
  if (!r.json.is_object() || !r.json.contains("error")) return Json::object();
  const Json& e = r.json["error"];
  EXPECT_TRUE(e.contains("code") && e["code"].is_string()) << r.body;
  EXPECT_TRUE(e.contains("message") && e["message"].is_string()) << r.body;
  return e;
}

TEST_F(ApiTest, UnknownFieldIs400NamingTheField) {
  HttpResult r = api().post("/api/v1/jobs", R"({"command": ["true"], "resources": {"gpu": 1}})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(errorOf(r).value("field", ""), "resources.gpu") << r.body;

  r = api().post("/api/v1/jobs", R"({"command": ["true"], "colour": "blue"})");
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_EQ(errorOf(r).value("field", ""), "colour") << r.body;
}

TEST_F(ApiTest, MalformedJsonIs400) {
  HttpResult r = api().post("/api/v1/jobs", R"({"command": ["true")");
  EXPECT_EQ(r.status, 400) << r.body;
  errorOf(r);
  r = api().post("/api/v1/jobs", "[1, 2]");
  EXPECT_EQ(r.status, 400) << r.body;
  errorOf(r);
}

TEST_F(ApiTest, YamlBodyIsAccepted) {
  std::string yaml =
      "name: from-yaml\n"
      "command: [\"true\"]\n"
      "grace_period: 1s\n"
      "env:\n"
      "  " +
      std::string(kMarkerEnv) + ": \"" + markerValue() + "\"\n";
  HttpResult r = api().post("/api/v1/jobs", yaml, "application/yaml");
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(r.json.value("name", ""), "from-yaml");
  std::int64_t id = r.json["id"].get<std::int64_t>();
  Json done = api().waitDone(id);
  EXPECT_EQ(done.value("state", ""), "succeeded");
}

TEST_F(ApiTest, BodyOverTheLimitIs413) {
  // Default limit 1 MiB; send 2 MiB of otherwise valid JSON.
  Json spec = {{"command", {"true"}}, {"env", {{"BIG", std::string(2 << 20, 'x')}}}};
  HttpResult r = api().post("/api/v1/jobs", spec.dump());
  EXPECT_EQ(r.status, 413) << r.body.substr(0, 300) << r.error;
  EXPECT_EQ(errorOf(r).value("code", ""), "too_large") << r.body.substr(0, 300);
}

TEST_F(ApiTest, InfeasibleRequestIs422NamingTheLargestNode) {
  HttpResult r = api().post("/api/v1/jobs", R"({"command": ["true"], "resources": {"gpus": 16}})");
  EXPECT_EQ(r.status, 422) << r.body;
  Json e = errorOf(r);
  EXPECT_EQ(e.value("field", ""), "resources.gpus") << r.body;
  EXPECT_NE(e.value("message", "").find("largest node has 4"), std::string::npos) << r.body;
}

TEST_F(ApiTest, UnknownJobAndUnknownRouteAre404Json) {
  HttpResult r = api().get("/api/v1/jobs/987654");
  EXPECT_EQ(r.status, 404) << r.body;
  errorOf(r);
  for (const char* path :
       {"/api/v1/jobs/987654/events", "/api/v1/jobs/987654/attempts", "/api/v1/jobs/987654/logs"}) {
    r = api().get(path);
    EXPECT_EQ(r.status, 404) << path << ": " << r.body;
    errorOf(r);
  }
  r = api().post("/api/v1/jobs/987654/cancel", "");
  EXPECT_EQ(r.status, 404) << r.body;
  errorOf(r);

  r = api().get("/api/v1/no-such-thing");
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_EQ(errorOf(r).value("message", "").rfind("no route for", 0), 0u) << r.body;
}

TEST_F(ApiTest, ListPaginatesAndFilters) {
  // A job belongs to whoever submits it: one token per user.
  const std::string alice = userToken("alice", "paging", "engineer");
  const std::string bob = userToken("bob", "paging", "engineer");
  const std::string carol = userToken("carol", "elsewhere", "engineer");
  ASSERT_FALSE(alice.empty() || bob.empty() || carol.empty());
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 5; ++i) {
    Json spec = {{"name", "page-" + std::to_string(i)},
                 {"project", "paging"},
                 {"command", {"true"}},
                 {"env", {{kMarkerEnv, markerValue()}}}};
    ids.push_back(apiAs(i == 0 ? alice : bob).submit(spec));
  }
  Json other = {{"project", "elsewhere"},
                {"command", {"sleep", "30"}},
                {"grace_period", "1s"},
                {"env", {{kMarkerEnv, markerValue()}}}};
  std::int64_t other_id = apiAs(carol).submit(other);
  ASSERT_GT(other_id, 0);
  for (auto id : ids) ASSERT_GT(id, 0);
  for (auto id : ids) api().waitDone(id);
  ASSERT_TRUE(api().waitState(other_id, "running"));

  // Pages of 2, newest first, following next_before to the end.
  std::vector<std::int64_t> seen;
  std::string path = "/api/v1/jobs?project=paging&limit=2";
  for (int page = 0; page < 10; ++page) {
    HttpResult r = api().get(path);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_LE(r.json["jobs"].size(), 2u);
    for (const auto& j : r.json["jobs"]) seen.push_back(j["id"].get<std::int64_t>());
    if (r.json["next_before"].is_null()) break;
    path = "/api/v1/jobs?project=paging&limit=2&before=" + r.json["next_before"].dump();
  }
  std::vector<std::int64_t> want(ids.rbegin(), ids.rend());
  EXPECT_EQ(seen, want);

  auto idsOf = [&](const std::string& query) {
    std::set<std::int64_t> out;
    HttpResult r = api().get("/api/v1/jobs?" + query);
    EXPECT_EQ(r.status, 200) << query << ": " << r.body;
    if (r.status == 200) {
      for (const auto& j : r.json["jobs"]) out.insert(j["id"].get<std::int64_t>());
    }
    return out;
  };
  EXPECT_EQ(idsOf("user=alice"), std::set<std::int64_t>{ids[0]});
  EXPECT_EQ(idsOf("user=carol"), std::set<std::int64_t>{other_id});
  EXPECT_EQ(idsOf("project=elsewhere"), std::set<std::int64_t>{other_id});
  EXPECT_EQ(idsOf("state=running"), std::set<std::int64_t>{other_id});
  EXPECT_EQ(idsOf("state=succeeded&project=paging").size(), 5u);
  EXPECT_EQ(idsOf("state=succeeded&user=bob").size(), 4u);
  EXPECT_TRUE(idsOf("state=failed").empty());
  EXPECT_EQ(api().post("/api/v1/jobs/" + std::to_string(other_id) + "/cancel", "").status, 200);
  api().waitDone(other_id);
}

TEST_F(ApiTest, BadQueryValuesAre400NamingTheParameter) {
  struct Case {
    std::string query;
    std::string field;
  };
  for (const Case& c :
       {Case{"limit=0", "limit"}, Case{"limit=1001", "limit"}, Case{"limit=abc", "limit"},
        Case{"state=bogus", "state"}, Case{"before=-1", "before"}}) {
    HttpResult r = api().get("/api/v1/jobs?" + c.query);
    EXPECT_EQ(r.status, 400) << c.query << ": " << r.body;
    EXPECT_EQ(errorOf(r).value("field", ""), c.field) << c.query << ": " << r.body;
  }
}

TEST_F(ApiTest, CancelOfFinishedJobIs409) {
  std::int64_t id = api().submit(scriptJob("exit 0"));
  ASSERT_GT(id, 0);
  api().waitDone(id);
  HttpResult r = api().post("/api/v1/jobs/" + std::to_string(id) + "/cancel", "");
  EXPECT_EQ(r.status, 409) << r.body;
  errorOf(r);
  EXPECT_EQ(api().post("/api/v1/jobs/424242/cancel", "").status, 404);
}

TEST_F(ApiTest, HealthAndNodes) {
  EXPECT_EQ(api().get("/healthz").status, 200);
  EXPECT_EQ(api().get("/readyz").status, 200);
  HttpResult r = api().get("/api/v1/nodes");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_EQ(r.json["nodes"].size(), 1u) << r.body;
  EXPECT_EQ(r.json["nodes"][0].value("name", ""), "local");
  EXPECT_EQ(r.json["nodes"][0]["gpus"].size(), 4u) << r.body;
}

// Every route the API is documented to have: method and OpenAPI path.
const std::vector<std::pair<std::string, std::string>> kExpectedRoutes = {
    {"GET", "/healthz"},
    {"GET", "/readyz"},
    {"GET", "/api/v1/openapi.json"},
    {"POST", "/api/v1/jobs"},
    {"GET", "/api/v1/jobs"},
    {"GET", "/api/v1/jobs/{id}"},
    {"POST", "/api/v1/jobs/{id}/cancel"},
    {"GET", "/api/v1/jobs/{id}/events"},
    {"GET", "/api/v1/jobs/{id}/attempts"},
    {"GET", "/api/v1/jobs/{id}/logs"},
    {"GET", "/api/v1/nodes"},
};

std::string toUpper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::string toLower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

TEST_F(ApiTest, OpenApiDocumentsEveryRoute) {
  HttpResult r = api().get("/api/v1/openapi.json");
  ASSERT_EQ(r.status, 200) << r.body;
  ASSERT_TRUE(r.json.is_object()) << r.body;
  ASSERT_TRUE(r.json.contains("openapi") && r.json["openapi"].is_string());
  EXPECT_EQ(r.json["openapi"].get<std::string>().rfind("3.", 0), 0u) << r.json["openapi"];
  ASSERT_TRUE(r.json.contains("paths") && r.json["paths"].is_object());
  const Json& paths = r.json["paths"];
  for (const auto& [method, path] : kExpectedRoutes) {
    EXPECT_TRUE(paths.contains(path) && paths[path].contains(toLower(method)))
        << method << " " << path << " is missing from the OpenAPI document";
  }
}

TEST_F(ApiTest, EveryDocumentedRouteIsServed) {
  HttpResult r = api().get("/api/v1/openapi.json");
  ASSERT_EQ(r.status, 200) << r.body;
  const Json& paths = r.json["paths"];
  ASSERT_TRUE(paths.is_object());
  static const std::set<std::string> kMethods = {"get",    "post", "put",    "patch",
                                                 "delete", "head", "options"};
  // Calls with "1" for every id change what they find: the walk signs in as
  // an admin of its own, whose token 1 is not (tokens are per user), and
  // the bootstrap token is left alone.
  ASSERT_EQ(api().post("/api/v1/users", R"({"name": "walker", "admin": true})").status, 201);
  HttpResult issued = api().post("/api/v1/tokens", R"({"name": "walk", "user": "walker"})");
  ASSERT_EQ(issued.status, 201) << issued.body;
  const Api walker = apiAs(issued.json.value("token", ""));
  int checked = 0;
  // Logout revokes the token that asks, which would leave every later route
  // answering 401 whether it exists or not: it goes last.
  std::optional<std::string> logout;
  for (const auto& [path, item] : paths.items()) {
    std::string concrete = path;
    for (size_t open; (open = concrete.find('{')) != std::string::npos;) {
      size_t close = concrete.find('}', open);
      ASSERT_NE(close, std::string::npos) << path;
      concrete.replace(open, close - open + 1, "1");
    }
    for (const auto& [method, op] : item.items()) {
      if (!kMethods.count(method)) continue;
      if (method == "post" && path == "/api/v1/logout") {
        logout = concrete;
        continue;
      }
      HttpResult res = walker.request(toUpper(method), concrete);
      ASSERT_NE(res.status, 0) << method << " " << concrete << ": " << res.error;
      bool no_route = res.status == 404 && res.json.is_object() && res.json.contains("error") &&
                      res.json["error"].value("message", "").rfind("no route for", 0) == 0;
      EXPECT_FALSE(no_route) << toUpper(method) << " " << path
                             << " is documented but not served: " << res.body;
      EXPECT_NE(res.status, 405) << toUpper(method) << " " << path << ": " << res.body;
      ++checked;
    }
  }
  if (logout) {
    HttpResult res = walker.request("POST", *logout);
    EXPECT_TRUE(res.status >= 200 && res.status < 300) << "POST " << *logout << ": " << res.body;
    ++checked;
  }
  EXPECT_GE(checked, static_cast<int>(kExpectedRoutes.size()));
}

}  // namespace
}  // namespace ty::e2e

namespace ty::e2e {
namespace {

// Two servers over one store would place the same jobs twice: the second
// refuses to start, and the first keeps serving.
TEST_F(ApiTest, ASecondServerOnTheSameDataDirRefusesToStart) {
  ProcResult second = runCli(
      {"server", "--listen", "127.0.0.1:0", "--data-dir", data_dir_, "--fake-gpus", "1xA100-80GB"});
  EXPECT_EQ(second.exit_code, 1);
  EXPECT_NE(second.err.find("another trainyard server is using"), std::string::npos) << second.err;
  EXPECT_EQ(api().get("/readyz").status, 200);
}

}  // namespace
}  // namespace ty::e2e

namespace ty::e2e {
namespace {

TEST_F(ApiTest, IdempotencyKeyMakesASubmissionSafeToResend) {
  Json spec = scriptJob("true");
  HttpResult first = api().post("/api/v1/jobs", spec.dump(), "application/json",
                                {{"Idempotency-Key", "nightly-7"}});
  ASSERT_EQ(first.status, 201) << first.body;
  HttpResult again = api().post("/api/v1/jobs", spec.dump(), "application/json",
                                {{"Idempotency-Key", "nightly-7"}});
  ASSERT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json["id"], first.json["id"]);
  HttpResult list = api().get("/api/v1/jobs");
  EXPECT_EQ(list.json["jobs"].size(), 1u);
  HttpResult bad =
      api().post("/api/v1/jobs", spec.dump(), "application/json", {{"Idempotency-Key", "a b"}});
  EXPECT_EQ(bad.status, 400);
  EXPECT_EQ(bad.json["error"]["field"], "Idempotency-Key");
}

}  // namespace
}  // namespace ty::e2e
