#include "auth/roles.h"

#include <cstdio>
#include <cstdlib>

namespace ty::auth {
namespace {

constexpr RoleSet kAdmin = roleBit(Role::kAdmin);
constexpr RoleSet kEngineer = roleBit(Role::kEngineer);
constexpr RoleSet kDataEngineer = roleBit(Role::kDataEngineer);
constexpr RoleSet kViewer = roleBit(Role::kViewer);
constexpr RoleSet kMembers = kAdmin | kEngineer | kDataEngineer | kViewer;

using enum Permission;
using enum PermissionScope;

// In declaration order of Permission: permissionInfo() indexes it.
constexpr PermissionInfo kPermissions[] = {
    {kReadHealth, "health.read", kAnyUser},
    {kWhoami, "whoami", kAnyUser},
    {kReadCluster, "cluster.read", kAnyUser},
    {kReadJobs, "jobs.read", kProject},
    {kReadLogs, "logs.read", kProject},
    {kReadEvents, "events.read", kProject},
    {kReadMetrics, "metrics.read", kProject},
    {kSubmitJobs, "jobs.submit", kProject},
    {kCancelJobs, "jobs.cancel", kProject},
    {kReadDatasets, "datasets.read", kProject},
    {kManageDatasets, "datasets.manage", kProject},
    {kManageMembers, "members.manage", kProject},
    {kManageTokens, "tokens.manage", kGlobal},
    {kManageUsers, "users.manage", kGlobal},
    {kManageProjects, "projects.manage", kGlobal},
    {kManageQueues, "queues.manage", kGlobal},
    {kReadAudit, "audit.read", kGlobal},
};

// The role table. Roles are not a ladder (a data engineer manages datasets
// but cannot submit jobs; an engineer submits but does not manage
// datasets), so each row names the set of roles it grants to.
constexpr Grant kGrants[] = {
    {kReadHealth, kAnySignedIn, false},  {kWhoami, kAnySignedIn, false},
    {kReadCluster, kAnySignedIn, false}, {kReadJobs, kMembers, false},
    {kReadLogs, kMembers, false},        {kReadEvents, kMembers, false},
    {kReadMetrics, kMembers, false},     {kSubmitJobs, kAdmin | kEngineer, false},
    {kCancelJobs, kEngineer, true},      {kCancelJobs, kAdmin, false},
    {kReadDatasets, kMembers, false},    {kManageDatasets, kAdmin | kDataEngineer, false},
    {kManageMembers, kAdmin, false},     {kManageTokens, kAnySignedIn, true},
    // kManageUsers, kManageProjects, kManageQueues, kReadAudit and others'
    // tokens: global admins only, so no rows.
};

constexpr bool permissionsInOrder() {
  for (size_t i = 0; i < std::size(kPermissions); ++i) {
    if (static_cast<size_t>(kPermissions[i].permission) != i) return false;
  }
  return std::size(kPermissions) == static_cast<size_t>(kReadAudit) + 1;
}
static_assert(permissionsInOrder(), "kPermissions must list every Permission in order");

bool granted(Permission permission, RoleSet held, const Principal& principal,
             const Target& target) {
  for (const Grant& g : kGrants) {
    if (g.permission != permission || (g.roles & held) == 0) continue;
    if (g.own_only && target.owner != principal.user) continue;
    return true;
  }
  return false;
}

}  // namespace

const char* roleName(Role role) {
  switch (role) {
    case Role::kAdmin:
      return "admin";
    case Role::kEngineer:
      return "engineer";
    case Role::kDataEngineer:
      return "data-engineer";
    case Role::kViewer:
      return "viewer";
  }
  return "unknown";
}

Result<Role> parseRole(std::string_view name) {
  for (Role r : kAllRoles) {
    if (name == roleName(r)) return r;
  }
  return Status::invalidArgument(
      "unknown role '" + std::string(name) + "' (admin, engineer, data-engineer or viewer)",
      "role");
}

std::span<const PermissionInfo> permissionTable() { return kPermissions; }
std::span<const Grant> grantTable() { return kGrants; }

const PermissionInfo& permissionInfo(Permission p) {
  auto i = static_cast<size_t>(p);
  if (i >= std::size(kPermissions)) {
    std::fprintf(stderr, "permissionInfo: bad permission %zu\n", i);
    std::abort();
  }
  return kPermissions[i];
}

const char* permissionName(Permission p) { return permissionInfo(p).name; }

const char* decisionName(Decision d) {
  switch (d) {
    case Decision::kAllow:
      return "allow";
    case Decision::kDeny:
      return "deny";
    case Decision::kHidden:
      return "hidden";
  }
  return "unknown";
}

Decision authorize(const Principal& principal, Permission permission, const Target& target) {
  if (principal.user.empty()) return Decision::kDeny;
  const PermissionInfo& info = permissionInfo(permission);
  switch (info.scope) {
    case kAnyUser:
    case kGlobal: {
      if (info.scope == kGlobal && principal.token_project) return Decision::kDeny;
      if (principal.is_admin) return Decision::kAllow;
      return granted(permission, kAnySignedIn, principal, target) ? Decision::kAllow
                                                                  : Decision::kDeny;
    }
    case kProject: {
      // A project permission needs a project; a caller that forgot it gets
      // the safe answer.
      if (target.project.empty()) return Decision::kDeny;
      if (principal.token_project && *principal.token_project != target.project) {
        return Decision::kHidden;
      }
      if (principal.is_admin) return Decision::kAllow;
      auto it = principal.projects.find(target.project);
      if (it == principal.projects.end()) return Decision::kHidden;
      RoleSet held = roleBit(it->second) | kAnySignedIn;
      return granted(permission, held, principal, target) ? Decision::kAllow : Decision::kDeny;
    }
  }
  return Decision::kDeny;
}

Status decisionStatus(Decision d, Permission permission, std::string_view what) {
  switch (d) {
    case Decision::kAllow:
      return Status::ok();
    case Decision::kDeny:
      return Status::permissionDenied(std::string("not allowed: ") + permissionName(permission));
    case Decision::kHidden:
      return Status::notFound("no such " + std::string(what));
  }
  return Status::permissionDenied("not allowed");
}

}  // namespace ty::auth
