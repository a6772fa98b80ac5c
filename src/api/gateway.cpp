#include "api/gateway.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "api/http_status.h"
#include "api/identity_routes.h"
#include "api/request_util.h"
#include "auth/tokens.h"
#include "codec/object_reader.h"

namespace ty {
namespace {

constexpr DurationMs kTouchEveryMs = 60'000;

// The value of cookie `name` in a Cookie header ("a=1; ty_session=...").
std::optional<std::string> cookieValue(const std::string& header, std::string_view name) {
  size_t pos = 0;
  while (pos < header.size()) {
    size_t end = header.find(';', pos);
    if (end == std::string::npos) end = header.size();
    std::string_view pair(header.data() + pos, end - pos);
    while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
    size_t eq = pair.find('=');
    if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
      return std::string(pair.substr(eq + 1));
    }
    pos = end + 1;
  }
  return std::nullopt;
}

bool mutating(const std::string& method) { return method != "GET" && method != "HEAD"; }

std::string sessionCookie(const std::string& value, DurationMs max_age) {
  // Secure: browsers keep sending it to http://localhost and 127.0.0.1,
  // which they count as secure origins, and to nothing else over plain HTTP.
  return std::string(kSessionCookie) + "=" + value +
         "; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=" + std::to_string(max_age / 1000);
}

void unauthenticated(httplib::Response& res, const Status& why) {
  writeError(res, why);
  res.set_header("WWW-Authenticate", "Bearer realm=\"trainyard\"");
}

}  // namespace

Gateway::Gateway(Store& store, const Clock& clock, GatewayOptions options)
    : store_(store),
      clock_(clock),
      options_(options),
      token_limits_(options.rate_limit),
      address_limits_(options.rate_limit),
      login_limits_(options.login_rate_limit),
      lockout_(options.lockout) {
  // A hash to verify against when the user does not exist or has no
  // password, so that such a login takes as long as a wrong password. Made
  // here, not on first use, so the first such login is not slower either.
  auto h = auth::hashPassword(auth::newToken(), options_.password_params);
  if (!h.isOk()) std::abort();  // libsodium cannot allocate: nothing is safe
  decoy_hash_ = *h;
}

std::string Gateway::csrfToken(const std::string& session_secret) {
  return auth::tokenHash("csrf:" + session_secret);
}

void Gateway::writeLimited(httplib::Response& res, DurationMs retry_after,
                           const std::string& message) {
  writeError(res, Status::resourceExhausted(message));
  res.set_header("Retry-After",
                 std::to_string(std::max<DurationMs>(1, (retry_after + 999) / 1000)));
}

void Gateway::handle(const Route& route, const httplib::Request& req, httplib::Response& res) {
  if (!observer_) return dispatch(route, req, res);
  // Wall time as measured here, not the injected clock: this is a
  // measurement, and tests move their clock by hand.
  auto start = std::chrono::steady_clock::now();
  dispatch(route, req, res);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  // httplib answers 200 for a handler that set no status (a stream).
  observer_(route, res.status == -1 ? 200 : res.status, took.count());
}

void Gateway::dispatch(const Route& route, const httplib::Request& req, httplib::Response& res) {
  Caller caller;
  caller.address = req.remote_addr;
  if (route.access.kind == Access::Kind::kPublic) {
    route.handler(req, res, caller);
    if (mutating(req.method)) audit(req, res, caller);
    return;
  }
  if (Status st = authenticate(route, req, caller); !st.isOk()) {
    // Without valid credentials a client is limited by its address, so a
    // flood of guessed tokens is slowed like any other.
    auth::TakeResult take = address_limits_.take("addr:" + caller.address, clock_.now());
    if (!take.allowed) {
      return writeLimited(res, take.retry_after_ms, "too many requests from this address");
    }
    if (st.code() == StatusCode::kUnauthenticated) {
      unauthenticated(res, st);
    } else {
      writeError(res, st);
    }
    if (mutating(req.method)) audit(req, res, caller);
    return;
  }
  // A job token has no token id: it is limited per job.
  auth::TakeResult take = token_limits_.take(
      caller.job_attempt ? "job:" + std::to_string(caller.job_attempt->job.value())
                         : "token:" + std::to_string(caller.token.id),
      clock_.now());
  if (!take.allowed) {
    return writeLimited(res, take.retry_after_ms,
                        "too many requests with this token; slow down and retry after the "
                        "Retry-After seconds");
  }
  if (route.access.kind == Access::Kind::kFixed) {
    if (Status st = caller.allow(route.access.permission, {}, "resource"); !st.isOk()) {
      writeError(res, st);
      if (mutating(req.method)) audit(req, res, caller);
      return;
    }
  }
  route.handler(req, res, caller);
  if (!caller.checked && res.status < 400) {
    // A route that touches a resource answered without asking whether the
    // caller may: a bug, and answering could leak another project's data.
    spdlog::error("{} {}: the handler did not check {}; refusing the answer", req.method,
                  route.doc.path, auth::permissionName(route.access.permission));
    res.headers.clear();
    writeError(res, Status::internal("internal error"));
  }
  if (mutating(req.method)) audit(req, res, caller);
}

Status Gateway::authenticateJob(const Route& route, const httplib::Request& req,
                                const std::string& secret, Caller& caller) {
  const Status refused = Status::unauthenticated(
      "the job token is not valid here: it works only for the metrics of its own job while its "
      "attempt runs");
  if (!options_.job_tokens || !route.access.job_token) return refused;
  std::optional<AttemptKey> key = options_.job_tokens->verify(secret);
  if (!key) return refused;
  auto id = pathId(req, "job");
  if (!id.isOk() || *id != key->job.value()) return refused;
  auto job = store_.getJob(key->job);
  if (!job.isOk()) {
    return job.status().code() == StatusCode::kNotFound ? refused : job.status();
  }
  // Bound to the attempt: a retry, the end of the job or a preemption ends
  // the token too, although nothing was stored or revoked.
  bool current = job->attempts == key->number &&
                 (job->state == JobState::kRunning || job->state == JobState::kScheduled);
  if (!current) return refused;
  caller.via = Caller::Via::kJobToken;
  caller.job_attempt = key;
  caller.principal = auth::Principal{};
  caller.principal.user = "job:" + std::to_string(key->job.value());
  return Status::ok();
}

Status Gateway::authenticate(const Route& route, const httplib::Request& req, Caller& caller) {
  std::string secret;
  if (req.has_header("Authorization")) {
    auto bearer = auth::parseBearer(req.get_header_value("Authorization"));
    if (!bearer) {
      return Status::unauthenticated(
          "the Authorization header must be \"Bearer <token>\"; create a token with `trainyard "
          "tokens create` or sign in with `trainyard login`");
    }
    secret = *bearer;
    if (auth::JobTokens::looksLikeJobToken(secret)) {
      return authenticateJob(route, req, secret, caller);
    }
    caller.via = Caller::Via::kToken;
  } else if (auto cookie = cookieValue(req.get_header_value("Cookie"), kSessionCookie)) {
    secret = *cookie;
    caller.via = Caller::Via::kSession;
  } else {
    return Status::unauthenticated(
        "sign in first: send \"Authorization: Bearer <token>\" (`trainyard login` stores one for "
        "the CLI)");
  }
  const Status refused = Status::unauthenticated(
      "the token is not valid: unknown, expired or revoked; sign in again with `trainyard "
      "login`");
  if (!auth::looksLikeToken(secret)) return refused;
  Timestamp now = clock_.now();
  auto found = store_.findTokenByHash(auth::tokenHash(secret), now);
  if (!found.isOk()) return found.status();
  if (!*found) return refused;
  caller.token = **found;
  // Known only here, where the secret is: whoami gives it back so that a
  // reloaded page, which still has the cookie, can send changes again.
  if (caller.via == Caller::Via::kSession) caller.csrf = csrfToken(secret);
  if (caller.via == Caller::Via::kSession && mutating(req.method)) {
    // A cookie rides along with any request the browser makes, including
    // ones another site triggers; the CSRF token proves the page that sent
    // it could read the login answer.
    std::string csrf = req.get_header_value(kCsrfHeader);
    if (csrf.empty() || !auth::hashesEqual(csrf, caller.csrf)) {
      return Status::permissionDenied(std::string("missing or wrong ") + kCsrfHeader +
                                      " header: send the csrf_token the login answered with");
    }
  }
  TY_RETURN_IF_ERROR(principalOf(caller.token.user, caller.token.project, caller));
  if (now - caller.token.last_used_at >= kTouchEveryMs) {
    // Throttled: a write per request would cost more than the request.
    (void)store_.touchToken(caller.token.id, now);
  }
  return Status::ok();
}

Status Gateway::principalOf(const std::string& name, const std::string& token_project,
                            Caller& caller) {
  auto user = store_.getUser(name);
  if (!user.isOk()) {
    if (user.status().code() == StatusCode::kNotFound) {
      return Status::unauthenticated("the token's user no longer exists");
    }
    return user.status();
  }
  if (user->disabled) {
    return Status::unauthenticated("user " + user->name + " is disabled; ask an admin");
  }
  auto memberships = store_.membershipsOfUser(user->name);
  if (!memberships.isOk()) return memberships.status();
  caller.principal = auth::Principal{};
  caller.principal.user = user->name;
  caller.principal.is_admin = user->is_admin;
  for (const Membership& m : *memberships) {
    // A role this version does not know grants nothing.
    if (auto role = auth::parseRole(m.role); role.isOk())
      caller.principal.projects[m.project] = *role;
  }
  if (!token_project.empty()) caller.principal.token_project = token_project;
  return Status::ok();
}

std::vector<Route> Gateway::sessionRoutes() {
  using R = httplib::Request;
  using W = httplib::Response;
  return {
      {{"POST",
        "/api/v1/login",
        "Sign in with a user name and password, or with an API token: starts a web session "
        "(cookie and CSRF token) or, with mode \"token\", returns a new API token",
        {},
        "{\"user\", \"password\"} or {\"token\"}; optional \"mode\": \"session\" | \"token\", "
        "\"token_name\", \"expires_in\"",
        {200, 201, 400, 401, 429}},
       Access::publicRoute(),
       [this](const R& q, W& s, Caller& c) { login(q, s, c); }},
      {{"POST",
        "/api/v1/logout",
        "End the session, or revoke the token, that sends this request",
        {},
        "",
        {204, 401}},
       Access::fixed(auth::Permission::kWhoami),
       [this](const R& q, W& s, Caller& c) { logout(q, s, c); }},
  };
}

void Gateway::login(const httplib::Request& req, httplib::Response& res, Caller& caller) {
  Timestamp now = clock_.now();
  auth::TakeResult take = login_limits_.take("login:" + caller.address, now);
  if (!take.allowed) {
    return writeLimited(res, take.retry_after_ms,
                        "too many sign-in attempts from this address; wait and try again");
  }
  auto body = jsonObjectBody(req);
  if (!body.isOk()) return writeError(res, body.status());
  ObjectReader r(*body, "", "login");
  std::string name, password, token, mode = "session", token_name = "cli";
  Status st = r.string("user", name);
  if (st.isOk()) st = r.string("password", password);
  if (st.isOk()) st = r.string("token", token);
  if (st.isOk()) st = r.string("mode", mode);
  if (st.isOk()) st = r.string("token_name", token_name);
  const Json* expires_in = r.get("expires_in");
  if (st.isOk()) st = r.finish();
  if (!st.isOk()) return writeError(res, st);
  if (mode != "session" && mode != "token") {
    return writeError(res, Status::invalidArgument("must be \"session\" or \"token\"", "mode"));
  }
  if (token.empty() == name.empty()) {
    return writeError(res, Status::invalidArgument(
                               "give either \"user\" and \"password\", or \"token\"", "user"));
  }
  std::optional<DurationMs> ttl;
  if (expires_in) {
    auto d = parseExpiresIn(*expires_in);
    if (!d.isOk()) return writeError(res, d.status());
    ttl = *d;
  }

  std::string source_project;
  Timestamp source_expiry = 0;
  if (!token.empty()) {
    // An API token signs in too, so the bootstrap admin can use the web UI
    // before any password exists.
    const Status refused = Status::unauthenticated(
        "the token is not valid: unknown, expired or "
        "revoked");
    if (!auth::looksLikeToken(token)) return unauthenticated(res, refused);
    auto found = store_.findTokenByHash(auth::tokenHash(token), now);
    if (!found.isOk()) return writeError(res, found.status());
    if (!*found) return unauthenticated(res, refused);
    if (Status p = principalOf((*found)->user, (*found)->project, caller); !p.isOk()) {
      return unauthenticated(res, p);
    }
    caller.audit_detail = "signed in with token " + std::to_string((*found)->id);
    // What a token signs in to is never more than the token itself: the same
    // project limit, and no later expiry.
    source_project = (*found)->project;
    source_expiry = (*found)->expires_at;
  } else {
    caller.principal.user = validIdentityName(name) ? name : "";
    const Status wrong = Status::unauthenticated("wrong user name or password");
    if (password.empty()) {
      return writeError(res, Status::invalidArgument("is required with \"user\"", "password"));
    }
    // Names that cannot exist share one lockout key, so that made-up names
    // of any length cost no memory.
    const std::string key = validIdentityName(name) ? name : "\x01invalid";
    auto user = validIdentityName(name) ? store_.getUser(name) : Result<User>(Status::notFound(""));
    // A known user's lock lives in their row (it survives a restart, and an
    // admin's password reset lifts it); an unknown name's only here.
    std::optional<Timestamp> until;
    if (user.isOk()) {
      if (user->locked_until > now) until = user->locked_until;
    } else {
      until = lockout_.locked(key, now);
    }
    if (until) {
      // Refused without looking at the password: guessing on is pointless.
      caller.audit_detail = "refused: account locked";
      return writeLimited(res, *until - now,
                          "the account is locked after repeated failed sign-ins; try again in " +
                              std::to_string((*until - now + 59'999) / 60'000) +
                              " minutes or ask an admin");
    }
    bool ok = false;
    if (user.isOk() && !user->password_hash.empty() && !user->disabled) {
      ok = auth::verifyPassword(user->password_hash, password);
    } else {
      (void)auth::verifyPassword(decoy_hash_, password);
    }
    if (!ok) {
      caller.audit_detail = "sign-in failed";
      if (auto locked = lockout_.recordFailure(key, now); locked && user.isOk()) {
        UserChange lock;
        lock.locked_until = *locked;
        if (Status st = store_.updateUser(name, lock); st.isOk()) {
          lockout_.recordSuccess(key);  // the row holds the lock from here
        }
        caller.audit_detail = "sign-in failed; account locked";
      }
      return unauthenticated(res, wrong);
    }
    lockout_.recordSuccess(key);
    if (auth::needsRehash(user->password_hash, options_.password_params)) {
      // Only if the hash is still the one just verified: a password changed
      // meanwhile must not be overwritten with the old one.
      if (auto h = auth::hashPassword(password, options_.password_params); h.isOk()) {
        UserChange rehash;
        rehash.password_hash = *h;
        rehash.if_password_hash = user->password_hash;
        (void)store_.updateUser(name, rehash);
      }
    }
    if (Status p = principalOf(name, "", caller); !p.isOk()) return unauthenticated(res, p);
    caller.audit_detail = "signed in with a password";
  }

  ApiToken spec;
  spec.user = caller.user();
  spec.project = source_project;
  auto capped = [source_expiry](Timestamp at) {
    if (source_expiry == 0) return at;
    return at == 0 ? source_expiry : std::min(at, source_expiry);
  };
  if (mode == "token") {
    spec.name = token_name;
    spec.expires_at = capped(ttl ? now + *ttl : 0);
    auto issued = issueToken(store_, now, spec);
    if (!issued.isOk()) return writeError(res, issued.status());
    Json out = tokenToJson(issued->token, now);
    out["token"] = issued->secret;
    caller.audit_detail += "; issued token " + std::to_string(issued->token.id);
    return writeJson(res, 201, out);
  }
  DurationMs session_ttl = ttl ? std::min(*ttl, options_.session_ttl) : options_.session_ttl;
  spec.name = kSessionTokenName;
  spec.expires_at = capped(now + session_ttl);
  session_ttl = spec.expires_at - now;
  auto issued = issueToken(store_, now, spec);
  if (!issued.isOk()) return writeError(res, issued.status());
  res.set_header("Set-Cookie", sessionCookie(issued->secret, session_ttl));
  res.set_header("Cache-Control", "no-store");
  writeJson(res, 200,
            {{"user", caller.user()},
             {"admin", caller.principal.is_admin},
             {"expires_at", spec.expires_at},
             {"csrf_token", csrfToken(issued->secret)}});
}

void Gateway::logout(const httplib::Request&, httplib::Response& res, Caller& caller) {
  Status st = store_.revokeToken(caller.user(), caller.token.id, clock_.now());
  if (!st.isOk()) return writeError(res, st);
  caller.audit_detail = caller.via == Caller::Via::kSession
                            ? "ended session " + std::to_string(caller.token.id)
                            : "revoked token " + std::to_string(caller.token.id);
  if (caller.via == Caller::Via::kSession) res.set_header("Set-Cookie", sessionCookie("", 0));
  writeNoContent(res);
}

void Gateway::audit(const httplib::Request& req, const httplib::Response& res,
                    const Caller& caller) {
  // A rate-limited request is not recorded: a flood must not become a flood
  // of writes.
  if (res.status == 429 && caller.audit_detail.empty()) return;
  AuditRecord record;
  record.at = clock_.now();
  record.user = caller.user();
  record.address = caller.address;
  record.method = req.method;
  record.path = req.path;
  record.status = res.status;
  record.detail = caller.audit_detail;
  if (record.detail.empty() && res.status >= 400) {
    // The error's message says what went wrong; it never carries a secret.
    auto body = Json::parse(res.body, nullptr, false);
    if (body.is_object() && body.contains("error")) {
      record.detail = body["error"].value("message", "");
    }
  }
  if (record.detail.size() > 200) record.detail.resize(200);
  if (auto seq = store_.appendAudit(record); !seq.isOk()) {
    spdlog::warn("audit: cannot record {} {}: {}", req.method, req.path, seq.status().message());
  }
}

}  // namespace ty
