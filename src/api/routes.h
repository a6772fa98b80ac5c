// The route table: every HTTP route of the API, with the documentation the
// OpenAPI document is generated from and the permission it needs. A route
// exists only through this table, so the server, its OpenAPI document and
// its access rules cannot drift apart.
#pragma once

#include <httplib.h>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "auth/roles.h"
#include "codec/job_codec.h"
#include "common/ids.h"
#include "store/identity.h"

namespace ty {

struct ParamDoc {
  std::string name;
  std::string in;    // "path", "query" or "header"
  std::string type;  // "integer", "string", "boolean"
  std::string description;
};

struct RouteDoc {
  std::string method;  // "GET", "POST", "PUT", "PATCH", "DELETE"
  std::string path;    // OpenAPI form: "/api/v1/jobs/{id}"
  std::string summary;
  std::vector<ParamDoc> params;
  std::string request_body;  // description of the body; empty: none
  std::vector<int> responses;
  std::string content_type = "application/json";  // of the 2xx response
  // False for routes that are not part of the API (the web UI's pages and
  // files): they are served and access-checked like any route but left out
  // of the OpenAPI document.
  bool in_openapi = true;
};

// What a route needs from its caller. Every route declares one; a route left
// at the default (kUndeclared) stops the server at startup.
struct Access {
  enum class Kind {
    kUndeclared,
    kPublic,    // no credentials: health probes, the OpenAPI document, login
    kFixed,     // the gateway checks `permission` on no target before the handler
    kResource,  // the handler finds the target and calls Caller::allow() on it
  };
  Kind kind = Kind::kUndeclared;
  auth::Permission permission = auth::Permission::kReadHealth;
  // The gateway also accepts the job token (auth/job_tokens.h) of the job
  // at the path's {id}, while its attempt runs.
  bool job_token = false;

  static Access publicRoute() { return {Kind::kPublic, auth::Permission::kReadHealth}; }
  static Access fixed(auth::Permission p) { return {Kind::kFixed, p}; }
  static Access resource(auth::Permission p) { return {Kind::kResource, p}; }
  Access withJobToken() const {
    Access a = *this;
    a.job_token = true;
    return a;
  }
};

// Who is calling and how, handed to every handler by the gateway.
struct Caller {
  auth::Principal principal;  // empty user on public routes
  std::string address;        // the client's address
  enum class Via { kNone, kToken, kSession, kJobToken } via = Via::kNone;
  // With Via::kJobToken: the attempt whose token it is (the gateway checked
  // that it is the running attempt of the job at the path's {id}).
  std::optional<AttemptKey> job_attempt;
  ApiToken token;  // the token or session the request came with (id 0: none)
  // With Via::kSession: the session's CSRF token (Gateway::csrfToken), so
  // that GET /api/v1/whoami can give it back to a reloaded page.
  std::string csrf;
  // What the handler did, for the audit log ("job 12", "user bob"); never a
  // secret.
  std::string audit_detail;

  // The decision for `permission` on `target`, as a Status for the answer:
  // Ok, PermissionDenied (403) or NotFound ("no such <what>", 404). Marks
  // the request checked; the gateway answers 500 for a kResource route whose
  // handler succeeded without asking.
  Status allow(auth::Permission permission, const auth::Target& target, std::string_view what);
  bool checked = false;
  const std::string& user() const { return principal.user; }
};

using Handler = std::function<void(const httplib::Request&, httplib::Response&, Caller&)>;

struct Route {
  RouteDoc doc;
  Access access;
  Handler handler;
};

// Ok when every route declares its access and no (method, path) repeats;
// InvalidArgument naming the first bad route otherwise.
Status validateRoutes(const std::vector<Route>& routes);

// "/api/v1/jobs/{id}" -> "/api/v1/jobs/(\d+)": `{id}` is a numeric id,
// `{file}` a file name of [A-Za-z0-9._-] that does not start with a dot (the
// web UI's hashed asset names are base64url), any other parameter a name of
// [a-z0-9._-] ("/api/v1/projects/{p}").
std::string routeRegex(const std::string& path);
// The OpenAPI 3.0 document of `routes`, with the permission each needs.
Json openApiDocument(const std::vector<Route>& routes);

}  // namespace ty
