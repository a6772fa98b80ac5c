// Roles, permissions and the authorization decision.
//
// A user holds one Role in each project they belong to; a global admin flag
// sits beside that. Every API route asks authorize() for one Permission on
// one Target (the project and owner of the resource it touches). The answer
// comes from one table of grant rows (grantTable()), so the rules can be
// read, tested and documented (docs/security.md) in one place.
//
// Pure functions over values; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "common/status.h"

namespace ty::auth {

// A user's role within one project.
enum class Role { kAdmin, kEngineer, kDataEngineer, kViewer };
inline constexpr Role kAllRoles[] = {Role::kAdmin, Role::kEngineer, Role::kDataEngineer,
                                     Role::kViewer};

// "admin", "engineer", "data-engineer", "viewer".
const char* roleName(Role role);
// The inverse of roleName(); InvalidArgument (field "role") for other text.
Result<Role> parseRole(std::string_view name);

enum class Permission {
  // Any signed-in user, in no project.
  kReadHealth,   // health and version
  kWhoami,       // one's own identity and memberships
  kReadCluster,  // nodes and queues as the scheduler sees them
  // Within one project.
  kReadJobs,     // list and show jobs, their attempts
  kReadLogs,     // job logs
  kReadEvents,   // job events
  kReadMetrics,  // job and GPU metrics
  kSubmitJobs,
  kCancelJobs,  // own jobs for engineers, any of the project's for its admins
  kReadDatasets,
  kManageDatasets,
  kManageMembers,  // add, remove and change members of the project
  // Global: no project.
  kManageTokens,  // API tokens: one's own for anyone, others' for global admins
  kManageUsers,
  kManageProjects,
  kManageQueues,  // queues and quotas
  kReadAudit,
};

// Where a permission applies, which decides how a missing right is reported
// and what a project-scoped token may do.
enum class PermissionScope {
  kAnyUser,  // any signed-in principal, project-scoped tokens included
  kProject,  // a resource in Target::project
  kGlobal,   // system-wide; never through a project-scoped token
};

struct PermissionInfo {
  Permission permission;
  const char* name;  // "jobs.submit": for logs, errors and docs
  PermissionScope scope;
};

// A set of project roles, as bits; kAnyMember adds "any signed-in user",
// member or not, for permissions outside projects.
using RoleSet = std::uint8_t;
constexpr RoleSet roleBit(Role r) { return static_cast<RoleSet>(1u << static_cast<unsigned>(r)); }
inline constexpr RoleSet kAnySignedIn = 1u << 7;

// One row: holders of any role in `roles` get `permission`; when `own_only`,
// only on targets whose owner is the principal.
struct Grant {
  Permission permission;
  RoleSet roles;
  bool own_only;
};

// Every permission once, in declaration order.
std::span<const PermissionInfo> permissionTable();
// The grant rows. Global admins are allowed everything and appear in no
// row; a permission without rows is for global admins only.
std::span<const Grant> grantTable();

const PermissionInfo& permissionInfo(Permission p);
const char* permissionName(Permission p);

// Who is asking: resolved from a session or API token before authorize().
struct Principal {
  std::string user;  // never empty for a signed-in principal
  bool is_admin = false;
  std::map<std::string, Role, std::less<>> projects;  // project -> role there
  // Set when the principal authenticated with a token limited to one
  // project: it then acts only inside that project, admins included.
  std::optional<std::string> token_project;
};

// What is touched. `project` is empty for global things; `owner` is the
// user who owns the resource (a job's submitter, a token's user), empty when
// ownership does not apply.
struct Target {
  std::string project;
  std::string owner;
};

enum class Decision {
  kAllow,
  kDeny,    // 403: the resource is visible to the principal, the action not
  kHidden,  // 404: a resource in a project the principal cannot see
};

const char* decisionName(Decision d);

// The decision for `principal` doing `permission` on `target`:
//  - an empty user is denied everything (authentication comes first);
//  - a project permission outside the token's project, or in a project the
//    principal is not a member of, is Hidden, so that project and resource
//    names do not leak; inside a visible project, a missing grant is Deny;
//  - global admins are allowed everything within their token's scope;
//  - a global permission through a project-scoped token is Deny.
Decision authorize(const Principal& principal, Permission permission, const Target& target);

// Ok for Allow; PermissionDenied for Deny; NotFound ("no such <what>") for
// Hidden, with the same message a truly missing resource gets.
Status decisionStatus(Decision d, Permission permission, std::string_view what);

}  // namespace ty::auth
