// Gateway: what stands between a request and its route's handler. For each
// request it applies, in order: rate limits, authentication (an API token in
// `Authorization: Bearer`, or a web session cookie with its CSRF token), the
// route's declared permission, the handler, and the audit record of every
// mutating request. It also owns the routes that create and end sessions
// (login, logout), because they share its lockout and limits.
//
// Thread-safe: handlers run on the HTTP server's worker threads; the limits
// lock internally and the store is thread-safe.
#pragma once

#include <httplib.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/routes.h"
#include "auth/job_tokens.h"
#include "auth/passwords.h"
#include "auth/rate_limit.h"
#include "common/clock.h"
#include "store/store.h"

namespace ty {

struct GatewayOptions {
  // Per token; and per client address for requests without valid credentials.
  auth::TokenBucketConfig rate_limit{200, 100.0, 10000};
  // Per client address, on POST /api/v1/login.
  auth::TokenBucketConfig login_rate_limit{10, 0.5, 10000};
  auth::LoginGuardConfig lockout;
  DurationMs session_ttl = 12LL * 3600 * 1000;
  auth::PasswordParams password_params = auth::PasswordParams::interactive();
  // The key of job tokens; null: job tokens are refused.
  std::shared_ptr<const auth::JobTokens> job_tokens;
};

// The name of the cookie that carries a web session, and of the header that
// must repeat the session's CSRF token on every request that changes state.
inline constexpr const char* kSessionCookie = "ty_session";
inline constexpr const char* kCsrfHeader = "X-CSRF-Token";
// The token name sessions are stored under (sessions are tokens with an
// expiry, so listing and revoking them needs nothing new).
inline constexpr const char* kSessionTokenName = "web session";

// Told of every request a route answered, after the answer is complete
// (follow streams: once the stream is set up): the route, the HTTP status
// and the seconds it took. Called on the worker thread, so it must be
// thread-safe and quick.
using RequestObserver = std::function<void(const Route& route, int status, double seconds)>;

class Gateway {
 public:
  // Aborts on limits that validateTokenBucket/validateLoginGuard reject:
  // the config reader checks them first.
  Gateway(Store& store, const Clock& clock, GatewayOptions options);

  // Runs `route` for `req` behind the checks above, then tells the observer.
  void handle(const Route& route, const httplib::Request& req, httplib::Response& res);

  // Sets the observer of answered requests (metrics). Set it before serving;
  // it is read without a lock. Kept a plain callback so the gateway does not
  // depend on the metrics library.
  void setObserver(RequestObserver observer) { observer_ = std::move(observer); }

  // POST /api/v1/login and POST /api/v1/logout.
  std::vector<Route> sessionRoutes();

  // The CSRF token of a session: derived from the session's secret, so it
  // needs no storage, and unknown to anyone who cannot read the cookie.
  static std::string csrfToken(const std::string& session_secret);

 private:
  // handle() without the observer.
  void dispatch(const Route& route, const httplib::Request& req, httplib::Response& res);
  // Fills `caller` from the request's credentials, or says why not
  // (Unauthenticated; PermissionDenied for a session without its CSRF token).
  Status authenticate(const Route& route, const httplib::Request& req, Caller& caller);
  // authenticate() for a job token: only on a route that accepts them, for
  // the job at the path's {id}, while the token's attempt is that job's
  // current one and the job is scheduled or running.
  Status authenticateJob(const Route& route, const httplib::Request& req, const std::string& secret,
                         Caller& caller);
  // Fills caller.principal for user `name` (limited to `token_project` when
  // not empty); Unauthenticated when the user is disabled or gone.
  Status principalOf(const std::string& name, const std::string& token_project, Caller& caller);
  void login(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void logout(const httplib::Request& req, httplib::Response& res, Caller& caller);
  // 429 with Retry-After.
  static void writeLimited(httplib::Response& res, DurationMs retry_after,
                           const std::string& message);
  void audit(const httplib::Request& req, const httplib::Response& res, const Caller& caller);

  Store& store_;
  const Clock& clock_;
  GatewayOptions options_;
  auth::TokenBucket token_limits_;
  auth::TokenBucket address_limits_;
  auth::TokenBucket login_limits_;
  auth::LoginGuard lockout_;
  std::string decoy_hash_;    // set once in the constructor
  RequestObserver observer_;  // may be empty
};

}  // namespace ty
