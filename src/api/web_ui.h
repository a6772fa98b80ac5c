// WebUi: the browser app (web/, built by Vite into web/dist) as served by
// `trainyard server`. Its pages and files are ordinary routes of the route
// table (public, left out of the OpenAPI document), so they pass through the
// gateway's limits and the request metrics like every other route:
//
//   GET /, /login, /overview, /jobs, /jobs/{id}, /submit, /queues, /nodes,
//       /admin, /admin/{section}: index.html (the app routes in the browser)
//   GET /assets/{file}: a file of <root>/assets, by name
//
// The build is read into memory: index.html and every file directly in
// <root>/assets. A file is answered only when its name is a key of that
// index, so no part of a request path ever reaches the filesystem. The
// `.br` and `.gz` files the web build writes beside each asset are the
// precompressed forms of that asset, sent when the client accepts them;
// they are never served under their own names. The server never compresses
// an asset itself: httplib would do it with brotli at quality 11 on every
// request, seconds of CPU for the app's bundle.
//
// A page request looks at index.html and assets/ (two stats) and reloads
// the build when either changed, so a rebuild needs no restart. Without
// index.html every page answers 503 with a short page, compiled in, that
// says how to build the app.
//
// Thread-safe: requests run on many worker threads. The build in force is
// an immutable snapshot behind a mutex; an answer keeps its snapshot alive
// until it is sent, even across a reload.
#pragma once

#include <httplib.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "api/routes.h"

namespace ty {

// The headers every page carries: the app has no inline scripts; styles
// may be inline because the component library injects <style> tags and the
// charts set style attributes (a nonce would need per-request templating).
inline constexpr const char* kWebUiPageCsp =
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; font-src 'self' data:; connect-src 'self'; object-src 'none'; "
    "base-uri 'self'; form-action 'self'; frame-ancestors 'none'";
// Assets have a content hash in their names: a new build has new names.
inline constexpr const char* kWebUiAssetCacheControl = "public, max-age=31536000, immutable";

// How an asset is sent, chosen from the request's Accept-Encoding.
enum class ContentCoding { kIdentity, kBrotli, kGzip };

// Brotli when the client accepts it (q > 0, named or through "*") and a .br
// form exists, else gzip on the same terms, else the plain bytes. Brotli
// wins whatever the q values say: both are lossless, and it is smaller.
ContentCoding chooseCoding(std::string_view accept_encoding, bool have_br, bool have_gzip);

// The Content-Type of an asset by its extension ("index-Ab1.js" ->
// "text/javascript; charset=utf-8"); application/octet-stream if unknown.
std::string assetContentType(std::string_view name);

class WebUi {
 public:
  // `root`: the directory the web build writes (index.html, assets/); empty:
  // none (the pages say how to build one). Reads the build now and logs a
  // warning when `root` is set but holds no index.html.
  explicit WebUi(std::string root);
  WebUi(const WebUi&) = delete;
  WebUi& operator=(const WebUi&) = delete;

  const std::string& root() const { return root_; }
  // Whether index.html was there at the last look.
  bool built() const;

  // The page and asset routes above; they borrow this WebUi, which must
  // outlive them.
  std::vector<Route> routes();

  // The fallback for paths no route serves, for the server's error handler:
  // a GET (or HEAD) answered 404 for a path outside /api/ and /assets/ by a
  // client that accepts text/html (a browser following a link into the app)
  // gets index.html, still with status 404, so that the app shows its
  // not-found page. Returns whether it answered; other clients keep the
  // JSON 404.
  bool answerNotFound(const httplib::Request& req, httplib::Response& res);

 private:
  struct Stamp;
  struct Asset;
  struct Build;

  // How index.html and assets/ under `root` look now (a few stats).
  static Stamp stampOf(const std::string& root);
  // Reads the build under `root`; `stamp` was taken first, so a build that
  // changes while it is read is read again on the next page request.
  static std::shared_ptr<const Build> load(const std::string& root, const Stamp& stamp);

  // The build in force, reloaded first when index.html or assets/ changed.
  std::shared_ptr<const Build> fresh();
  // The build in force as it is (asset requests: no filesystem access).
  std::shared_ptr<const Build> current() const;
  void page(httplib::Response& res, int status);
  void asset(const httplib::Request& req, httplib::Response& res);

  const std::string root_;
  mutable std::mutex mu_;
  std::shared_ptr<const Build> build_;  // guarded by mu_; never null
};

}  // namespace ty
