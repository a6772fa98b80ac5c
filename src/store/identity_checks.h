// Input checks shared by the Store implementations, so that memory and
// SQLite refuse the same identity records with the same errors. Internal to
// src/store; pure functions, thread-safe.
#pragma once

#include "store/identity.h"

namespace ty::store_checks {

// InvalidArgument (field "name") unless the user's name is valid.
Status checkUser(const User& user);
// InvalidArgument (field "name") unless the project's name is valid.
Status checkProject(const Project& project);
// InvalidArgument for an empty user, project or role.
Status checkMembership(const Membership& m);
// InvalidArgument for an empty user or hash, or a negative expiry.
Status checkToken(const ApiToken& token);
// InvalidArgument for a limit outside 1..1000 or a negative cursor.
Status checkAuditQuery(const AuditQuery& query);

// Messages used by both implementations.
std::string userNotFound(const std::string& name);
std::string projectNotFound(const std::string& name);

}  // namespace ty::store_checks
