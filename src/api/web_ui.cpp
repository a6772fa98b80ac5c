#include "api/web_ui.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "api/http_status.h"

namespace ty {

namespace fs = std::filesystem;

struct WebUi::Asset {
  std::string content_type;
  std::shared_ptr<const std::string> plain;
  std::shared_ptr<const std::string> br;    // null: no .br beside it
  std::shared_ptr<const std::string> gzip;  // null: no .gz beside it
};

// What the files looked like when a build was read: a page request compares
// it with a fresh look to know whether to read again. The assets folder's
// time changes when files are added to it, such as the .br/.gz files the
// web build writes after index.html.
struct WebUi::Stamp {
  bool has_index = false;
  fs::file_time_type index_time{};
  std::uintmax_t index_size = 0;
  fs::file_time_type assets_time{};
  bool operator==(const Stamp&) const = default;
};

struct WebUi::Build {
  Stamp stamp;
  std::shared_ptr<const std::string> index;  // null: not built
  std::map<std::string, Asset, std::less<>> assets;
};

namespace {

constexpr const char* kHtml = "text/html; charset=utf-8";

// Answered by every page while there is no build. Self-contained: it needs
// nothing from the (missing) build, and its policy allows nothing but its
// own inline style.
constexpr const char* kNotBuiltCsp = "default-src 'none'; style-src 'unsafe-inline'";
constexpr const char* kNotBuiltPage = R"(<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Trainyard: web UI not built</title>
<style>
body {
  font: 16px/1.5 system-ui, sans-serif; color: #1f2328;
  max-width: 40rem; margin: 4rem auto; padding: 0 1rem;
}
code { background: #f0f2f4; padding: 0.1rem 0.3rem; border-radius: 4px; }
</style>
</head>
<body>
<h1>The web UI is not built</h1>
<p>This server has no build of the web UI to serve.</p>
<p>In a checkout of Trainyard, run <code>scripts/dev.sh run</code>: it runs
<code>npm ci</code> and <code>vite build</code> in <code>web/</code> and starts the server.
Or start the server with <code>--web-root DIR</code> (config key <code>web_root</code>)
naming a directory that holds a build (<code>index.html</code> and <code>assets/</code>).
A new build is picked up without a restart.</p>
<p>The REST API works without it: it is at <code>/api/v1</code>, described by
<code>/api/v1/openapi.json</code>.</p>
</body>
</html>
)";

void setPageHeaders(httplib::Response& res, const char* csp) {
  // no-cache, not no-store: the browser may keep the page but asks each
  // time whether it changed, so a new build is seen at once.
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Content-Security-Policy", csp);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "same-origin");
  res.set_header("X-Frame-Options", "DENY");
}

std::optional<std::string> readFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream out;
  out << in.rdbuf();
  if (in.bad()) return std::nullopt;
  return std::move(out).str();
}

// The names /assets/{file} can reach (routeRegex's {file}); other files in
// assets/ could never be asked for, so they are not read.
bool servableName(std::string_view name) {
  auto ok = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  };
  return !name.empty() && name.front() != '.' && std::all_of(name.begin(), name.end(), ok);
}

bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

}  // namespace

ContentCoding chooseCoding(std::string_view accept_encoding, bool have_br, bool have_gzip) {
  // The q value each coding is given; absent: not named.
  std::optional<double> br, gzip, any;
  size_t pos = 0;
  while (pos <= accept_encoding.size()) {
    size_t end = accept_encoding.find(',', pos);
    if (end == std::string_view::npos) end = accept_encoding.size();
    std::string_view item = accept_encoding.substr(pos, end - pos);
    pos = end + 1;
    size_t semi = item.find(';');
    std::string name;
    for (char c : item.substr(0, semi)) {
      if (c != ' ' && c != '\t')
        name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    double q = 1.0;
    if (semi != std::string_view::npos) {
      std::string params(item.substr(semi + 1));
      params.erase(std::remove_if(params.begin(), params.end(),
                                  [](char c) { return c == ' ' || c == '\t'; }),
                   params.end());
      if (params.rfind("q=", 0) == 0 || params.rfind("Q=", 0) == 0) {
        q = std::strtod(params.c_str() + 2, nullptr);
      }
    }
    if (name == "br") {
      br = q;
    } else if (name == "gzip" || name == "x-gzip") {
      gzip = q;
    } else if (name == "*") {
      any = q;
    }
  }
  auto accepted = [&](const std::optional<double>& named) {
    if (named) return *named > 0;
    return any.has_value() && *any > 0;
  };
  if (have_br && accepted(br)) return ContentCoding::kBrotli;
  if (have_gzip && accepted(gzip)) return ContentCoding::kGzip;
  return ContentCoding::kIdentity;
}

std::string assetContentType(std::string_view name) {
  static const std::map<std::string, std::string, std::less<>> kTypes = {
      {"js", "text/javascript; charset=utf-8"},
      {"mjs", "text/javascript; charset=utf-8"},
      {"css", "text/css; charset=utf-8"},
      {"html", "text/html; charset=utf-8"},
      {"svg", "image/svg+xml"},
      {"woff2", "font/woff2"},
      {"woff", "font/woff"},
      {"ttf", "font/ttf"},
      {"png", "image/png"},
      {"jpg", "image/jpeg"},
      {"jpeg", "image/jpeg"},
      {"gif", "image/gif"},
      {"webp", "image/webp"},
      {"ico", "image/x-icon"},
      {"json", "application/json"},
      {"map", "application/json"},
      {"txt", "text/plain; charset=utf-8"},
      {"wasm", "application/wasm"},
  };
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos) return "application/octet-stream";
  auto it = kTypes.find(name.substr(dot + 1));
  return it == kTypes.end() ? "application/octet-stream" : it->second;
}

WebUi::WebUi(std::string root) : root_(std::move(root)) {
  build_ = load(root_, stampOf(root_));
  if (!root_.empty() && !build_->index) {
    spdlog::warn(
        "web UI: no index.html in {}; its pages answer 503 until it is built (scripts/dev.sh run, "
        "or --web-root DIR naming a build). The API is at /api/v1",
        root_);
  } else if (build_->index) {
    spdlog::info("web UI: serving {} ({} files)", root_, build_->assets.size());
  }
}

WebUi::Stamp WebUi::stampOf(const std::string& root) {
  Stamp s;
  if (root.empty()) return s;
  std::error_code ec;
  fs::path index = fs::path(root) / "index.html";
  s.index_time = fs::last_write_time(index, ec);
  if (ec) return Stamp{};
  s.has_index = true;
  s.index_size = fs::file_size(index, ec);
  if (ec) s.index_size = 0;
  s.assets_time = fs::last_write_time(fs::path(root) / "assets", ec);
  if (ec) s.assets_time = {};
  return s;
}

std::shared_ptr<const WebUi::Build> WebUi::load(const std::string& root, const Stamp& stamp) {
  auto build = std::make_shared<Build>();
  build->stamp = stamp;
  if (!stamp.has_index) return build;
  auto index = readFile(fs::path(root) / "index.html");
  if (!index) {
    build->stamp = Stamp{};  // gone since the look: look again next time
    return build;
  }
  build->index = std::make_shared<const std::string>(std::move(*index));
  std::error_code ec;
  fs::path assets = fs::path(root) / "assets";
  std::map<std::string, std::string> compressed;  // "a.js.br" -> its bytes
  for (fs::directory_iterator it(assets, ec), end; !ec && it != end; it.increment(ec)) {
    std::string name = it->path().filename().string();
    std::error_code type_ec;
    if (!servableName(name) || !it->is_regular_file(type_ec)) continue;
    auto bytes = readFile(it->path());
    if (!bytes) continue;
    if (endsWith(name, ".br") || endsWith(name, ".gz")) {
      compressed.emplace(std::move(name), std::move(*bytes));
      continue;
    }
    Asset a;
    a.content_type = assetContentType(name);
    a.plain = std::make_shared<const std::string>(std::move(*bytes));
    build->assets.emplace(std::move(name), std::move(a));
  }
  // A precompressed form is kept only beside its plain file: the key is
  // always the plain name, and ".br"/".gz" names are never keys.
  for (auto& [name, bytes] : compressed) {
    bool br = endsWith(name, ".br");
    auto it = build->assets.find(std::string_view(name).substr(0, name.size() - 3));
    if (it == build->assets.end()) continue;
    (br ? it->second.br : it->second.gzip) = std::make_shared<const std::string>(std::move(bytes));
  }
  return build;
}

bool WebUi::built() const { return current()->index != nullptr; }

std::shared_ptr<const WebUi::Build> WebUi::current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return build_;
}

std::shared_ptr<const WebUi::Build> WebUi::fresh() {
  if (root_.empty()) return current();
  Stamp now = stampOf(root_);
  std::lock_guard<std::mutex> lock(mu_);
  if (build_->stamp == now) return build_;
  // Read under the lock: a rebuild is rare, and concurrent page requests
  // then wait for one read instead of each doing its own.
  build_ = load(root_, now);
  if (build_->index) {
    spdlog::info("web UI: reloaded {} ({} files)", root_, build_->assets.size());
  } else {
    spdlog::warn("web UI: index.html is gone from {}; its pages answer 503", root_);
  }
  return build_;
}

void WebUi::page(httplib::Response& res, int status) {
  std::shared_ptr<const Build> build = fresh();
  if (!build->index) {
    setPageHeaders(res, kNotBuiltCsp);
    res.set_content(kNotBuiltPage, kHtml);
    res.status = 503;
    return;
  }
  setPageHeaders(res, kWebUiPageCsp);
  res.set_content(*build->index, kHtml);
  res.status = status;
}

void WebUi::asset(const httplib::Request& req, httplib::Response& res) {
  std::shared_ptr<const Build> build = current();
  const std::string name = req.matches.size() > 1 ? req.matches[1].str() : std::string();
  auto it = build->assets.find(name);
  if (it == build->assets.end()) {
    writeError(res, Status::notFound("no such file: /assets/" + name));
    return;
  }
  const Asset& a = it->second;
  res.set_header("Cache-Control", kWebUiAssetCacheControl);
  res.set_header("X-Content-Type-Options", "nosniff");
  if (a.br || a.gzip) res.set_header("Vary", "Accept-Encoding");
  std::shared_ptr<const std::string> bytes = a.plain;
  switch (
      chooseCoding(req.get_header_value("Accept-Encoding"), a.br != nullptr, a.gzip != nullptr)) {
    case ContentCoding::kBrotli:
      res.set_header("Content-Encoding", "br");
      bytes = a.br;
      break;
    case ContentCoding::kGzip:
      res.set_header("Content-Encoding", "gzip");
      bytes = a.gzip;
      break;
    case ContentCoding::kIdentity:
      break;
  }
  // A content provider of known length, not a body: httplib compresses a
  // text body on the fly (brotli q11), which would encode the precompressed
  // bytes a second time, or burn seconds of CPU on the plain ones. It sends
  // a provider's bytes as they are. The provider holds the bytes, so a
  // reload meanwhile cannot pull them away.
  res.set_content_provider(bytes->size(), a.content_type,
                           [bytes](size_t offset, size_t length, httplib::DataSink& sink) {
                             if (offset > bytes->size()) return false;
                             return sink.write(bytes->data() + offset,
                                               std::min(length, bytes->size() - offset));
                           });
  res.status = 200;
}

bool WebUi::answerNotFound(const httplib::Request& req, httplib::Response& res) {
  if (res.status != 404 || !res.body.empty()) return false;
  if (req.method != "GET" && req.method != "HEAD") return false;
  // Under /api/ a client wants JSON, under /assets/ a file: never the app,
  // which a <script> tag would try to run.
  for (std::string_view prefix : {"/api/", "/assets/"}) {
    if (req.path.rfind(prefix, 0) == 0 || req.path == prefix.substr(0, prefix.size() - 1)) {
      return false;
    }
  }
  if (req.get_header_value("Accept").find("text/html") == std::string::npos) return false;
  std::shared_ptr<const Build> build = fresh();
  if (!build->index) return false;  // nothing to show: the JSON 404 says more
  setPageHeaders(res, kWebUiPageCsp);
  res.set_content(*build->index, kHtml);
  res.status = 404;
  return true;
}

std::vector<Route> WebUi::routes() {
  using R = httplib::Request;
  using W = httplib::Response;
  // The app's own routes (web/src); any other path a browser asks for gets
  // the app through answerNotFound(), with status 404.
  static constexpr const char* kPages[] = {
      "/",       "/login",  "/overview", "/jobs",  "/jobs/{id}",
      "/submit", "/queues", "/nodes",    "/admin", "/admin/{section}",
  };
  std::vector<Route> out;
  for (const char* path : kPages) {
    out.push_back({{"GET", path, "A page of the web UI", {}, "", {200, 503}, "text/html", false},
                   Access::publicRoute(),
                   [this](const R&, W& res, Caller&) { page(res, 200); }});
  }
  out.push_back({{"GET",
                  "/assets/{file}",
                  "A file of the web UI's build",
                  {{"file", "path", "string", "file name in the build's assets/"}},
                  "",
                  {200, 404},
                  "application/octet-stream",
                  false},
                 Access::publicRoute(),
                 [this](const R& req, W& res, Caller&) { asset(req, res); }});
  return out;
}

}  // namespace ty
