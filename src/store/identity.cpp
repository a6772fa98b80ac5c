#include "store/identity.h"

#include "store/identity_checks.h"

namespace ty {

bool validIdentityName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace store_checks {

namespace {

constexpr char kNameRule[] = "use 1-64 lower-case letters, digits, '.', '_' or '-'";

}  // namespace

Status checkUser(const User& user) {
  if (!validIdentityName(user.name)) {
    return Status::invalidArgument(std::string(kNameRule) + " for a user name", "name");
  }
  if (user.failed_logins < 0) return Status::invalidArgument("must be >= 0", "failed_logins");
  return Status::ok();
}

Status checkProject(const Project& project) {
  if (!validIdentityName(project.name)) {
    return Status::invalidArgument(std::string(kNameRule) + " for a project name", "name");
  }
  return Status::ok();
}

Status checkMembership(const Membership& m) {
  if (m.user.empty()) return Status::invalidArgument("a membership needs a user", "user");
  if (m.project.empty()) return Status::invalidArgument("a membership needs a project", "project");
  if (m.role.empty()) return Status::invalidArgument("a membership needs a role", "role");
  return Status::ok();
}

Status checkToken(const ApiToken& token) {
  if (token.user.empty()) return Status::invalidArgument("a token needs a user", "user");
  if (token.hash.empty()) return Status::invalidArgument("a token needs a hash", "hash");
  if (token.expires_at < 0) return Status::invalidArgument("must be >= 0", "expires_at");
  return Status::ok();
}

Status checkAuditQuery(const AuditQuery& query) {
  if (query.limit < 1 || query.limit > 1000) {
    return Status::invalidArgument("limit must be between 1 and 1000", "limit");
  }
  if (query.before_seq < 0) return Status::invalidArgument("must be >= 0", "before");
  return Status::ok();
}

std::string userNotFound(const std::string& name) { return "user " + name + " not found"; }
std::string projectNotFound(const std::string& name) { return "project " + name + " not found"; }

}  // namespace store_checks
}  // namespace ty
