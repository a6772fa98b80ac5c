// The identity routes: users, projects and their members, API tokens,
// whoami and the audit log (REST under /api/v1). Each route declares its
// permission in the route table; the gateway authenticates before any of
// them runs.
#pragma once

#include <string>
#include <vector>

#include "api/control_plane.h"
#include "api/routes.h"
#include "auth/passwords.h"
#include "common/clock.h"
#include "store/store.h"

namespace ty {

struct IdentityContext {
  Store* store = nullptr;
  const Clock* clock = nullptr;
  auth::PasswordParams password_params = auth::PasswordParams::interactive();
};

std::vector<Route> identityRoutes(const IdentityContext& ctx);

// A new token with its secret, which is shown once and never stored.
struct IssuedToken {
  ApiToken token;
  std::string secret;
};
// Makes a token for `spec.user` (name, project and expires_at from `spec`;
// the rest is set here) and stores its hash. InvalidArgument naming the
// field for a bad name; NotFound for an unknown user or project;
// FailedPrecondition when the token is scoped to a project its user is not
// a member of (global admins need no membership). Authorization is the
// caller's: this makes any token it is asked for.
Result<IssuedToken> issueToken(Store& store, Timestamp now, ApiToken spec);
// {"id","user","name","prefix","project","created_at","expires_at",
// "revoked_at","last_used_at","live"}: never the hash.
Json tokenToJson(const ApiToken& token, Timestamp now);
// "expires_in": "30d", "12h", "90m", "45s" or a number of seconds, at most
// 366 days. InvalidArgument (field `field`) otherwise.
Result<DurationMs> parseExpiresIn(const Json& value, const std::string& field = "expires_in");

}  // namespace ty
