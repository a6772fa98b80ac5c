#include "api/web_ui.h"

#include <gtest/gtest.h>
#include <httplib.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <thread>

#include "api/http_status.h"

namespace ty {
namespace {

namespace fs = std::filesystem;

constexpr const char* kJs = "index-BxY_9a-Z.js";

std::string compressWith(httplib::detail::compressor& c, const std::string& text) {
  std::string out;
  EXPECT_TRUE(c.compress(text.data(), text.size(), /*last=*/true, [&](const char* d, size_t n) {
    out.append(d, n);
    return true;
  }));
  return out;
}

std::string gzipOf(const std::string& text) {
  httplib::detail::gzip_compressor c;
  return compressWith(c, text);
}

std::string brotliOf(const std::string& text) {
  httplib::detail::brotli_compressor c;
  return compressWith(c, text);
}

void writeFile(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

// A WebUi over a build in a temporary directory, behind a real HTTP server
// whose error handler does what ApiServer's does: the SPA fallback, then a
// JSON 404.
class WebUiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::path(::testing::TempDir()) / "web_ui_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    root_ = tmpl;
  }
  void TearDown() override {
    if (http_) {
      // A stop() before the accept loop runs would be lost.
      while (!http_->is_running()) std::this_thread::yield();
      http_->stop();
      thread_.join();
    }
    std::error_code ec;
    fs::remove_all(root_, ec);
  }

  // index.html, a script with .br and .gz forms whose text differs from the
  // plain one (so the test sees which was sent), a stylesheet without
  // compressed forms, and files that must never be served.
  void writeBuild() {
    writeFile(root_ / "index.html", "<!doctype html><title>v1</title>");
    writeFile(root_ / "assets" / kJs, js_plain_);
    writeFile(root_ / "assets" / (std::string(kJs) + ".br"), brotliOf(js_br_));
    writeFile(root_ / "assets" / (std::string(kJs) + ".gz"), gzipOf(js_gz_));
    writeFile(root_ / "assets" / "index-D3f.css", "body{margin:0}");
    writeFile(root_ / "assets" / "orphan.js.gz", gzipOf("orphan"));
    writeFile(root_ / "assets" / ".hidden", "secret");
    writeFile(root_ / "secret.txt", "secret");
  }

  void start() {
    ui_ = std::make_unique<WebUi>(root_.string());
    routes_ = ui_->routes();
    http_ = std::make_unique<httplib::Server>();
    for (const Route& r : routes_) {
      http_->Get(routeRegex(r.doc.path), [&r](const httplib::Request& q, httplib::Response& s) {
        Caller caller;
        r.handler(q, s, caller);
      });
    }
    http_->set_error_handler(httplib::Server::HandlerWithResponse(
        [this](const httplib::Request& req, httplib::Response& res) {
          if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
          if (ui_->answerNotFound(req, res)) return httplib::Server::HandlerResponse::Handled;
          writeError(res, Status::notFound("no route for " + req.path));
          return httplib::Server::HandlerResponse::Handled;
        }));
    port_ = http_->bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    // The socket listens from here; requests wait in its backlog until the
    // accept loop runs.
    thread_ = std::thread([this] { http_->listen_after_bind(); });
  }

  httplib::Result get(const std::string& path, const httplib::Headers& headers = {},
                      bool decompress = true) {
    httplib::Client http("127.0.0.1", port_);
    http.set_decompress(decompress);
    return http.Get(path, headers);
  }

  void expectJson404(const std::string& path, const httplib::Headers& headers = {}) {
    auto res = get(path, headers);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 404) << path;
    EXPECT_TRUE(Json::accept(res->body)) << path << ": " << res->body;
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json") << path;
  }

  fs::path root_;
  std::string js_plain_ = std::string(4096, 'p') + "console.log('plain')";
  std::string js_br_ = "console.log('br')";
  std::string js_gz_ = "console.log('gz')";
  std::unique_ptr<WebUi> ui_;
  std::vector<Route> routes_;
  std::unique_ptr<httplib::Server> http_;
  std::thread thread_;
  int port_ = 0;
};

TEST(WebUiRoutes, ArePublicAndLeftOutOfTheOpenApiDocument) {
  WebUi ui("");
  std::vector<Route> routes = ui.routes();
  EXPECT_TRUE(validateRoutes(routes).isOk());
  std::set<std::string> paths;
  for (const Route& r : routes) {
    EXPECT_EQ(r.access.kind, Access::Kind::kPublic) << r.doc.path;
    EXPECT_FALSE(r.doc.in_openapi) << r.doc.path;
    EXPECT_EQ(r.doc.method, "GET");
    paths.insert(r.doc.path);
  }
  EXPECT_EQ(paths, (std::set<std::string>{"/", "/login", "/overview", "/jobs", "/jobs/{id}",
                                          "/submit", "/queues", "/nodes", "/admin",
                                          "/admin/{section}", "/assets/{file}"}));
  EXPECT_TRUE(openApiDocument(routes)["paths"].empty());
}

TEST(WebUiRoutes, FileParameterTakesHashedNamesAndNothingElse) {
  std::regex file(routeRegex("/assets/{file}"));
  for (const char* ok : {"/assets/index-BxY_9a-Z.js", "/assets/index-D3f.css", "/assets/_a.js",
                         "/assets/-x.woff2", "/assets/a.js.br"}) {
    EXPECT_TRUE(std::regex_match(std::string(ok), file)) << ok;
  }
  for (const char* bad : {"/assets/..", "/assets/.", "/assets/.hidden", "/assets/a/b.js",
                          "/assets/../index.html", "/assets/", "/assets/a%2e.js", "/assets/a b"}) {
    EXPECT_FALSE(std::regex_match(std::string(bad), file)) << bad;
  }
  // Other parameters keep their rules.
  EXPECT_EQ(routeRegex("/jobs/{id}"), R"(/jobs/(\d+))");
  EXPECT_EQ(routeRegex("/admin/{section}"), "/admin/([a-z0-9._-]+)");
}

TEST(ChooseCoding, PrefersBrotliThenGzipAmongWhatTheClientAccepts) {
  using C = ContentCoding;
  EXPECT_EQ(chooseCoding("gzip, deflate, br", true, true), C::kBrotli);
  EXPECT_EQ(chooseCoding("gzip;q=1.0, br;q=0.5", true, true), C::kBrotli);
  EXPECT_EQ(chooseCoding("gzip, deflate", true, true), C::kGzip);
  EXPECT_EQ(chooseCoding("br", false, true), C::kIdentity);
  EXPECT_EQ(chooseCoding("gzip, br", false, true), C::kGzip);
  EXPECT_EQ(chooseCoding("br;q=0, gzip", true, true), C::kGzip);
  EXPECT_EQ(chooseCoding("br; q=0 , gzip;q=0", true, true), C::kIdentity);
  EXPECT_EQ(chooseCoding("*", true, true), C::kBrotli);
  EXPECT_EQ(chooseCoding("*;q=0", true, true), C::kIdentity);
  EXPECT_EQ(chooseCoding("BR", true, false), C::kBrotli);
  EXPECT_EQ(chooseCoding("x-gzip", false, true), C::kGzip);
  EXPECT_EQ(chooseCoding("identity", true, true), C::kIdentity);
  EXPECT_EQ(chooseCoding("", true, true), C::kIdentity);
  // "brotli" is not "br".
  EXPECT_EQ(chooseCoding("brotli", true, true), C::kIdentity);
}

TEST(AssetContentType, ComesFromTheExtension) {
  EXPECT_EQ(assetContentType("index-BxY_9a-Z.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(assetContentType("index-D3f.css"), "text/css; charset=utf-8");
  EXPECT_EQ(assetContentType("logo.svg"), "image/svg+xml");
  EXPECT_EQ(assetContentType("inter.woff2"), "font/woff2");
  EXPECT_EQ(assetContentType("inter.woff"), "font/woff");
  EXPECT_EQ(assetContentType("a.png"), "image/png");
  EXPECT_EQ(assetContentType("favicon.ico"), "image/x-icon");
  EXPECT_EQ(assetContentType("m.json"), "application/json");
  EXPECT_EQ(assetContentType("index.js.map"), "application/json");
  EXPECT_EQ(assetContentType("README"), "application/octet-stream");
  EXPECT_EQ(assetContentType("a.exe"), "application/octet-stream");
}

TEST_F(WebUiTest, PagesAnswerIndexWithPolicyHeaders) {
  writeBuild();
  start();
  ASSERT_TRUE(ui_->built());
  for (const char* path : {"/", "/login", "/overview", "/jobs", "/jobs/12", "/submit", "/queues",
                           "/nodes", "/admin", "/admin/users"}) {
    auto res = get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 200) << path;
    EXPECT_EQ(res->body, "<!doctype html><title>v1</title>") << path;
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
    EXPECT_EQ(res->get_header_value("Cache-Control"), "no-cache");
    EXPECT_EQ(res->get_header_value("Content-Security-Policy"),
              "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
              "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; "
              "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'");
    EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
    EXPECT_EQ(res->get_header_value("Referrer-Policy"), "same-origin");
    EXPECT_EQ(res->get_header_value("X-Frame-Options"), "DENY");
  }
}

TEST_F(WebUiTest, AssetsAreCachedForeverAndTyped) {
  writeBuild();
  start();
  auto res = get("/assets/index-D3f.css", {{"Accept-Encoding", "identity"}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "body{margin:0}");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/css; charset=utf-8");
  EXPECT_EQ(res->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
  EXPECT_EQ(res->get_header_value("X-Content-Type-Options"), "nosniff");
  EXPECT_FALSE(res->has_header("Content-Encoding"));
  // Nothing to choose between: no Vary.
  EXPECT_FALSE(res->has_header("Vary"));
}

TEST_F(WebUiTest, PrecompressedFormIsSentAsStoredAndDecodesOnce) {
  writeBuild();
  start();
  const std::string path = std::string("/assets/") + kJs;
  struct Case {
    const char* accept;
    const char* encoding;  // "": plain
    std::string stored;    // the exact bytes on the wire
    std::string text;      // what they decode to
  };
  const std::vector<Case> cases = {
      {"gzip, deflate, br", "br", brotliOf(js_br_), js_br_},
      {"br", "br", brotliOf(js_br_), js_br_},
      {"gzip", "gzip", gzipOf(js_gz_), js_gz_},
      {"br;q=0, gzip", "gzip", gzipOf(js_gz_), js_gz_},
      {"identity", "", js_plain_, js_plain_},
  };
  for (const Case& c : cases) {
    httplib::Headers h = {{"Accept-Encoding", c.accept}};
    // As sent: the stored file, byte for byte, so httplib did not encode it
    // again.
    auto raw = get(path, h, /*decompress=*/false);
    ASSERT_TRUE(raw) << c.accept;
    EXPECT_EQ(raw->status, 200) << c.accept;
    EXPECT_EQ(raw->get_header_value("Content-Encoding"), c.encoding) << c.accept;
    EXPECT_EQ(raw->body, c.stored) << c.accept;
    EXPECT_EQ(raw->get_header_value("Content-Length"), std::to_string(c.stored.size())) << c.accept;
    EXPECT_EQ(raw->get_header_value("Vary"), "Accept-Encoding") << c.accept;
    EXPECT_EQ(raw->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
    EXPECT_EQ(raw->get_header_value("Cache-Control"), "public, max-age=31536000, immutable");
    // As a client reads it: decoded once, to the text.
    auto decoded = get(path, h);
    ASSERT_TRUE(decoded) << c.accept;
    EXPECT_EQ(decoded->body, c.text) << c.accept;
  }
}

TEST_F(WebUiTest, PlainAssetIsNotCompressedOnTheFly) {
  writeBuild();
  start();
  // No .br or .gz beside the stylesheet: the plain bytes, even to a client
  // that accepts brotli (httplib would spend brotli q11 on them).
  auto res = get("/assets/index-D3f.css", {{"Accept-Encoding", "gzip, deflate, br"}}, false);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  EXPECT_FALSE(res->has_header("Content-Encoding"));
  EXPECT_EQ(res->body, "body{margin:0}");
}

TEST_F(WebUiTest, OnlyIndexedNamesAreServed) {
  writeBuild();
  start();
  // Unknown, compressed forms by their own names, an orphan compressed file,
  // hidden files, files outside assets/ and any way out of the folder.
  for (const std::string& path :
       {std::string("/assets/nope.js"), "/assets/" + std::string(kJs) + ".br",
        "/assets/" + std::string(kJs) + ".gz", std::string("/assets/orphan.js.gz"),
        std::string("/assets/orphan.js"), std::string("/assets/.hidden"),
        std::string("/assets/index.html"), std::string("/assets/secret.txt"),
        std::string("/assets/.."), std::string("/assets/%2e%2e"),
        std::string("/assets/%2e%2e%2fsecret.txt"), std::string("/assets/..%2Fsecret.txt"),
        std::string("/assets/../secret.txt"), std::string("/secret.txt"),
        std::string("/index.html")}) {
    SCOPED_TRACE(path);
    expectJson404(path);
  }
}

TEST_F(WebUiTest, BrowserGetsTheAppWithStatus404ForUnknownPaths) {
  writeBuild();
  start();
  httplib::Headers browser = {{"Accept", "text/html,application/xhtml+xml,*/*;q=0.8"}};
  auto res = get("/no/such/page", browser);
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 404);
  EXPECT_EQ(res->body, "<!doctype html><title>v1</title>");
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_EQ(res->get_header_value("X-Frame-Options"), "DENY");
  EXPECT_NE(res->get_header_value("Content-Security-Policy").find("script-src 'self'"),
            std::string::npos);
  // API paths, other clients and other methods keep the JSON 404.
  expectJson404("/api/v1/nope", browser);
  expectJson404("/api", browser);
  expectJson404("/no/such/page");
  expectJson404("/no/such/page", {{"Accept", "application/json"}});
  expectJson404("/%FF%FE");
  // An asset that is not there, or a name no route takes, is an error even
  // for a browser.
  expectJson404("/assets/nope.js", browser);
  expectJson404("/assets/%2e%2e", browser);
  expectJson404("/assets", browser);
}

TEST_F(WebUiTest, WithoutABuildPagesSayHowToMakeOne) {
  start();
  EXPECT_FALSE(ui_->built());
  for (const char* path : {"/", "/jobs/3", "/admin/users"}) {
    auto res = get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, 503) << path;
    EXPECT_EQ(res->get_header_value("Content-Type"), "text/html; charset=utf-8");
    EXPECT_EQ(res->get_header_value("Content-Security-Policy"),
              "default-src 'none'; style-src 'unsafe-inline'");
    EXPECT_EQ(res->get_header_value("Cache-Control"), "no-cache");
    EXPECT_NE(res->body.find("web UI is not built"), std::string::npos);
    EXPECT_NE(res->body.find("scripts/dev.sh run"), std::string::npos);
    EXPECT_NE(res->body.find("--web-root DIR"), std::string::npos);
    EXPECT_NE(res->body.find("/api/v1/openapi.json"), std::string::npos);
  }
  expectJson404("/assets/index-BxY_9a-Z.js");
  // No app to fall back to: a browser gets the JSON 404 too.
  expectJson404("/no/such/page", {{"Accept", "text/html"}});
}

TEST_F(WebUiTest, NoRootConfiguredAnswersTheNotBuiltPage) {
  WebUi ui("");
  EXPECT_FALSE(ui.built());
  httplib::Response res;
  Caller caller;
  ui.routes().front().handler(httplib::Request(), res, caller);
  EXPECT_EQ(res.status, 503);
}

TEST_F(WebUiTest, RebuildIsPickedUpWithoutRestart) {
  start();
  ASSERT_EQ(get("/")->status, 503);
  // The first build appears while the server runs.
  writeBuild();
  auto res = get("/jobs");
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "<!doctype html><title>v1</title>");
  EXPECT_EQ(get(std::string("/assets/") + kJs, {{"Accept-Encoding", "identity"}})->body, js_plain_);

  // A rebuild: new index and asset names, the old ones removed. Its time is
  // set apart from the first build's, as a clock tick may not have passed.
  const fs::path index = root_ / "index.html";
  const fs::file_time_type before = fs::last_write_time(index);
  fs::remove(root_ / "assets" / kJs);
  writeFile(index, "<!doctype html><title>v2</title>");
  writeFile(root_ / "assets" / "index-N3w.js", "console.log('v2')");
  fs::last_write_time(index, before + std::chrono::seconds(5));
  // Assets are looked up in the build in force: the new one is not known
  // until a page request notices the change.
  expectJson404("/assets/index-N3w.js");
  EXPECT_EQ(get("/")->body, "<!doctype html><title>v2</title>");
  auto js = get("/assets/index-N3w.js", {{"Accept-Encoding", "identity"}});
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->body, "console.log('v2')");
  expectJson404(std::string("/assets/") + kJs);

  // The build removed: pages go back to the not-built answer.
  fs::remove(index);
  EXPECT_EQ(get("/")->status, 503);
}

TEST_F(WebUiTest, CompressedFormsWrittenAfterTheIndexAreFound) {
  // The web build writes .br/.gz files after index.html, so a page request
  // in between reads the build without them; the next one, with them.
  writeFile(root_ / "index.html", "<!doctype html><title>v1</title>");
  writeFile(root_ / "assets" / kJs, js_plain_);
  start();
  const std::string path = std::string("/assets/") + kJs;
  EXPECT_FALSE(get(path, {{"Accept-Encoding", "br"}}, false)->has_header("Content-Encoding"));
  const fs::file_time_type before = fs::last_write_time(root_ / "assets");
  writeFile(root_ / "assets" / (std::string(kJs) + ".br"), brotliOf(js_br_));
  fs::last_write_time(root_ / "assets", before + std::chrono::seconds(5));
  EXPECT_EQ(get("/")->status, 200);
  auto res = get(path, {{"Accept-Encoding", "br"}});
  EXPECT_EQ(res->get_header_value("Content-Encoding"), "br");
  EXPECT_EQ(res->body, js_br_);
}

TEST_F(WebUiTest, ConcurrentPagesAndAssetsDuringReloads) {
  writeBuild();
  start();
  const fs::path index = root_ / "index.html";
  const fs::file_time_type base = fs::last_write_time(index);
  std::atomic<int> bad{0};
  std::vector<std::thread> clients;
  for (int t = 0; t < 4; ++t) {
    clients.emplace_back([&] {
      httplib::Client http("127.0.0.1", port_);
      for (int i = 0; i < 25; ++i) {
        auto page = http.Get("/");
        auto css = http.Get("/assets/index-D3f.css");
        if (!page || page->status != 200 || page->body.find("<title>v") == std::string::npos) ++bad;
        if (!css || css->status != 200 || css->body != "body{margin:0}") ++bad;
      }
    });
  }
  for (int i = 1; i <= 20; ++i) {
    // Replaced whole, as a build does, so that no reader sees half a file.
    const fs::path next = root_ / "index.html.next";
    writeFile(next, "<!doctype html><title>v" + std::to_string(i) + "</title>");
    fs::last_write_time(next, base + std::chrono::seconds(i));
    fs::rename(next, index);
  }
  for (auto& c : clients) c.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
}  // namespace ty
