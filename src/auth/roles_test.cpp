#include "auth/roles.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace ty::auth {
namespace {

using enum Permission;

TEST(RolesTest, NamesRoundTrip) {
  const std::pair<Role, const char*> names[] = {{Role::kAdmin, "admin"},
                                                {Role::kEngineer, "engineer"},
                                                {Role::kDataEngineer, "data-engineer"},
                                                {Role::kViewer, "viewer"}};
  for (const auto& [role, name] : names) {
    EXPECT_STREQ(roleName(role), name);
    Result<Role> parsed = parseRole(name);
    ASSERT_TRUE(parsed.isOk()) << name;
    EXPECT_EQ(*parsed, role);
  }
  for (const char* bad : {"", "Admin", "data_engineer", "owner", "viewer "}) {
    Result<Role> parsed = parseRole(bad);
    ASSERT_FALSE(parsed.isOk()) << bad;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(parsed.status().field(), "role");
  }
}

TEST(RolesTest, PermissionTableNamesEveryPermissionOnce) {
  std::set<std::string> names;
  for (size_t i = 0; i < permissionTable().size(); ++i) {
    const PermissionInfo& info = permissionTable()[i];
    EXPECT_EQ(static_cast<size_t>(info.permission), i);
    EXPECT_TRUE(names.insert(info.name).second) << info.name;
    EXPECT_STREQ(permissionName(info.permission), info.name);
  }
}

TEST(RolesTest, GrantRowsOutsideProjectsUseOnlyAnySignedIn) {
  // Project roles mean nothing for a global permission; a row that named
  // one would be a rule that never applies.
  for (const Grant& g : grantTable()) {
    if (permissionInfo(g.permission).scope != PermissionScope::kProject) {
      EXPECT_EQ(g.roles, kAnySignedIn) << permissionName(g.permission);
    }
  }
}

// Expected decisions for a member of project "p", one character per role in
// the order admin, engineer, data-engineer, viewer: A allow, D deny (403),
// H hidden (404). Written out by hand, independently of grantTable().
struct Row {
  Permission permission;
  const char* own_in_p;    // target {p, the principal}
  const char* other_in_p;  // target {p, someone else}
  const char* own_in_q;    // target {q, the principal}: not a member of q
  const char* other_in_q;  // target {q, someone else}
};

constexpr Row kExpected[] = {
    {kReadHealth, "AAAA", "AAAA", "AAAA", "AAAA"},
    {kWhoami, "AAAA", "AAAA", "AAAA", "AAAA"},
    {kReadCluster, "AAAA", "AAAA", "AAAA", "AAAA"},
    {kReadJobs, "AAAA", "AAAA", "HHHH", "HHHH"},
    {kReadLogs, "AAAA", "AAAA", "HHHH", "HHHH"},
    {kReadEvents, "AAAA", "AAAA", "HHHH", "HHHH"},
    {kReadMetrics, "AAAA", "AAAA", "HHHH", "HHHH"},
    {kSubmitJobs, "AADD", "AADD", "HHHH", "HHHH"},
    {kCancelJobs, "AADD", "ADDD", "HHHH", "HHHH"},
    {kReadDatasets, "AAAA", "AAAA", "HHHH", "HHHH"},
    {kManageDatasets, "ADAD", "ADAD", "HHHH", "HHHH"},
    {kManageMembers, "ADDD", "ADDD", "HHHH", "HHHH"},
    {kManageTokens, "AAAA", "DDDD", "AAAA", "DDDD"},
    {kManageUsers, "DDDD", "DDDD", "DDDD", "DDDD"},
    {kManageProjects, "DDDD", "DDDD", "DDDD", "DDDD"},
    {kManageQueues, "DDDD", "DDDD", "DDDD", "DDDD"},
    {kReadAudit, "DDDD", "DDDD", "DDDD", "DDDD"},
};

char letter(Decision d) {
  switch (d) {
    case Decision::kAllow:
      return 'A';
    case Decision::kDeny:
      return 'D';
    case Decision::kHidden:
      return 'H';
  }
  return '?';
}

Principal member(Role role) {
  Principal p;
  p.user = "alice";
  p.projects["p"] = role;
  return p;
}

// The four letters for every role on one target.
std::string decisions(Permission permission, const Target& target,
                      const std::optional<std::string>& token_project = std::nullopt) {
  std::string out;
  for (Role r : kAllRoles) {
    Principal p = member(r);
    p.token_project = token_project;
    out += letter(authorize(p, permission, target));
  }
  return out;
}

TEST(AuthorizeTest, EveryPermissionRoleAndTarget) {
  ASSERT_EQ(std::size(kExpected), permissionTable().size()) << "a permission has no expected row";
  for (size_t i = 0; i < std::size(kExpected); ++i) {
    const Row& row = kExpected[i];
    ASSERT_EQ(static_cast<size_t>(row.permission), i);
    SCOPED_TRACE(permissionName(row.permission));
    EXPECT_EQ(decisions(row.permission, {"p", "alice"}), row.own_in_p);
    EXPECT_EQ(decisions(row.permission, {"p", "bob"}), row.other_in_p);
    EXPECT_EQ(decisions(row.permission, {"q", "alice"}), row.own_in_q);
    EXPECT_EQ(decisions(row.permission, {"q", "bob"}), row.other_in_q);
    // A token limited to the member's own project changes nothing inside it.
    EXPECT_EQ(decisions(row.permission, {"p", "alice"}, "p").find('H'), std::string::npos);
  }
}

TEST(AuthorizeTest, GlobalAdminIsAllowedEverything) {
  Principal admin;
  admin.user = "root";
  admin.is_admin = true;  // member of no project
  for (const PermissionInfo& info : permissionTable()) {
    SCOPED_TRACE(info.name);
    for (const Target& t : {Target{"p", "root"}, Target{"p", "bob"}, Target{"q", ""}}) {
      EXPECT_EQ(authorize(admin, info.permission, t), Decision::kAllow);
    }
  }
}

TEST(AuthorizeTest, ProjectTokenLimitsEvenAnAdmin) {
  Principal admin;
  admin.user = "root";
  admin.is_admin = true;
  admin.token_project = "p";
  for (const PermissionInfo& info : permissionTable()) {
    SCOPED_TRACE(info.name);
    Decision in_p = authorize(admin, info.permission, {"p", "bob"});
    Decision in_q = authorize(admin, info.permission, {"q", "bob"});
    switch (info.scope) {
      case PermissionScope::kAnyUser:
        EXPECT_EQ(in_p, Decision::kAllow);
        EXPECT_EQ(in_q, Decision::kAllow);
        break;
      case PermissionScope::kProject:
        EXPECT_EQ(in_p, Decision::kAllow);
        EXPECT_EQ(in_q, Decision::kHidden);
        break;
      case PermissionScope::kGlobal:
        EXPECT_EQ(in_p, Decision::kDeny);
        EXPECT_EQ(in_q, Decision::kDeny);
        break;
    }
  }
}

TEST(AuthorizeTest, ProjectTokenHidesTheMembersOtherProjects) {
  Principal eng = member(Role::kEngineer);
  eng.projects["q"] = Role::kAdmin;
  eng.token_project = "p";
  EXPECT_EQ(authorize(eng, kSubmitJobs, {"p", ""}), Decision::kAllow);
  EXPECT_EQ(authorize(eng, kReadJobs, {"q", "bob"}), Decision::kHidden);
  EXPECT_EQ(authorize(eng, kManageMembers, {"q", ""}), Decision::kHidden);
  EXPECT_EQ(authorize(eng, kWhoami, {}), Decision::kAllow);
  // A scoped token cannot mint itself an unscoped one.
  EXPECT_EQ(authorize(eng, kManageTokens, {"", "alice"}), Decision::kDeny);

  eng.token_project.reset();
  EXPECT_EQ(authorize(eng, kManageMembers, {"q", ""}), Decision::kAllow);
  EXPECT_EQ(authorize(eng, kManageTokens, {"", "alice"}), Decision::kAllow);
}

TEST(AuthorizeTest, RoleIsPerProject) {
  Principal p = member(Role::kViewer);
  p.projects["q"] = Role::kEngineer;
  EXPECT_EQ(authorize(p, kSubmitJobs, {"p", ""}), Decision::kDeny);
  EXPECT_EQ(authorize(p, kSubmitJobs, {"q", ""}), Decision::kAllow);
}

TEST(AuthorizeTest, NoUserNoAccess) {
  Principal anonymous;
  anonymous.is_admin = true;  // a malformed principal still gets nothing
  anonymous.projects["p"] = Role::kAdmin;
  for (const PermissionInfo& info : permissionTable()) {
    EXPECT_EQ(authorize(anonymous, info.permission, {"p", ""}), Decision::kDeny) << info.name;
  }
}

TEST(AuthorizeTest, OwnOnlyNeedsAnOwner) {
  // An engineer cannot cancel a job whose owner is unknown.
  EXPECT_EQ(authorize(member(Role::kEngineer), kCancelJobs, {"p", ""}), Decision::kDeny);
  EXPECT_EQ(authorize(member(Role::kAdmin), kCancelJobs, {"p", ""}), Decision::kAllow);
}

TEST(AuthorizeTest, ProjectPermissionWithoutProjectIsDenied) {
  EXPECT_EQ(authorize(member(Role::kAdmin), kReadJobs, {"", "alice"}), Decision::kDeny);
}

TEST(AuthorizeTest, DecisionStatus) {
  EXPECT_TRUE(decisionStatus(Decision::kAllow, kReadJobs, "job").isOk());
  Status deny = decisionStatus(Decision::kDeny, kCancelJobs, "job");
  EXPECT_EQ(deny.code(), StatusCode::kPermissionDenied);
  EXPECT_NE(deny.message().find("jobs.cancel"), std::string::npos);
  Status hidden = decisionStatus(Decision::kHidden, kReadJobs, "job: 42");
  EXPECT_EQ(hidden.code(), StatusCode::kNotFound);
  EXPECT_EQ(hidden.message(), "no such job: 42");
  EXPECT_STREQ(decisionName(Decision::kHidden), "hidden");
}

}  // namespace
}  // namespace ty::auth
