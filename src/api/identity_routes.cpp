#include "api/identity_routes.h"

#include <cctype>
#include <limits>
#include <optional>
#include <utility>

#include "api/http_status.h"
#include "api/request_util.h"
#include "auth/tokens.h"
#include "codec/object_reader.h"

namespace ty {
namespace {

using Req = httplib::Request;
using Res = httplib::Response;
using auth::Permission;

constexpr DurationMs kMaxExpiresIn = 366LL * 24 * 3600 * 1000;
constexpr std::size_t kMaxTokenName = 64;
constexpr char kNameRule[] = "use 1-64 lower-case letters, digits, '.', '_' or '-'";

// A handler body that reports failure as a Status; the wrapper turns it into
// the error answer, so each handler reads as a straight line of checks.
using Body = Status (*)(const IdentityContext&, const Req&, Res&, Caller&);

Handler wrap(const IdentityContext& ctx, Body body) {
  return [ctx, body](const Req& req, Res& res, Caller& caller) {
    Status s = body(ctx, req, res, caller);
    if (!s.isOk()) writeError(res, s);
  };
}

Json timeOrNull(Timestamp t) { return t ? Json(t) : Json(nullptr); }

Status checkName(const std::string& name, const char* what, const std::string& field) {
  if (validIdentityName(name)) return Status::ok();
  return Status::invalidArgument(std::string(kNameRule) + " for a " + what + " name", field);
}

// A required string field of a body.
Status requireString(ObjectReader& r, const std::string& key, std::string& out) {
  if (!r.get(key)) return Status::invalidArgument("required", r.path(key));
  return r.string(key, out);
}

// An optional boolean field, nullopt when absent.
Status optionalBool(ObjectReader& r, const std::string& key, std::optional<bool>& out) {
  if (!r.get(key)) return Status::ok();
  bool v = false;
  TY_RETURN_IF_ERROR(r.boolean(key, v));
  out = v;
  return Status::ok();
}

// The body of a request that carries a password. The JSON parser's error
// text quotes the last token it read, which here may be the password
// itself; such a message must not reach the answer or a log line.
Result<Json> secretBody(const Req& req) {
  auto body = jsonObjectBody(req);
  if (!body.isOk() && body.status().message().rfind("malformed JSON", 0) == 0) {
    return Status::invalidArgument(
        "malformed JSON (details withheld: the body carries a password)");
  }
  return body;
}

Json userToJson(const User& u, Timestamp now) {
  return {{"name", u.name},
          {"admin", u.is_admin},
          {"disabled", u.disabled},
          {"has_password", !u.password_hash.empty()},
          {"created_at", u.created_at},
          // A lock that has run out reads as none: 0 means "not locked now".
          {"locked_until", u.locked_until > now ? u.locked_until : 0}};
}

Json membershipsToJson(const std::vector<Membership>& ms) {
  Json out = Json::array();
  for (const Membership& m : ms) out.push_back({{"project", m.project}, {"role", m.role}});
  return out;
}

// The store's NotFound messages name the row ("user bob not found"); the
// API answers in one shape, the one a hidden resource gets too.
Status noSuch(const Status& s, const std::string& what) {
  return s.code() == StatusCode::kNotFound ? Status::notFound("no such " + what) : s;
}

// --- whoami -----------------------------------------------------------------

Status whoami(const IdentityContext&, const Req&, Res& res, Caller& caller) {
  const auth::Principal& p = caller.principal;
  Json projects = Json::array();
  for (const auto& [project, role] : p.projects) {
    projects.push_back({{"project", project}, {"role", auth::roleName(role)}});
  }
  Json kind = caller.via == Caller::Via::kToken     ? Json("token")
              : caller.via == Caller::Via::kSession ? Json("session")
                                                    : Json(nullptr);
  Json credential = {{"kind", kind},
                     {"token_id", caller.token.id},
                     {"token_name", caller.token.name},
                     {"project", p.token_project ? Json(*p.token_project) : Json(nullptr)},
                     {"expires_at", caller.token.expires_at}};
  Json out = {
      {"user", p.user}, {"admin", p.is_admin}, {"projects", projects}, {"auth", credential}};
  // A page reloaded in the browser still has the session cookie but no
  // longer the CSRF token of its login answer. Giving it back here does not
  // weaken the check: only a page that can read this answer gets it, and the
  // API allows no cross-origin reads (no CORS), so that is a same-origin one.
  if (caller.via == Caller::Via::kSession && !caller.csrf.empty()) out["csrf_token"] = caller.csrf;
  writeJson(res, 200, out);
  return Status::ok();
}

// --- users --------------------------------------------------------------------

Status listUsers(const IdentityContext& ctx, const Req&, Res& res, Caller&) {
  TY_ASSIGN_OR_RETURN(auto users, ctx.store->listUsers());
  Timestamp now = ctx.clock->now();
  Json out = Json::array();
  for (const User& u : users) out.push_back(userToJson(u, now));
  writeJson(res, 200, {{"users", out}});
  return Status::ok();
}

Status createUser(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  TY_ASSIGN_OR_RETURN(Json body, secretBody(req));
  ObjectReader r(body, "", "body");
  User user;
  std::string password;
  TY_RETURN_IF_ERROR(requireString(r, "name", user.name));
  TY_RETURN_IF_ERROR(r.boolean("admin", user.is_admin));
  bool has_password = r.get("password") != nullptr;
  TY_RETURN_IF_ERROR(r.string("password", password));
  TY_RETURN_IF_ERROR(r.finish());
  TY_RETURN_IF_ERROR(checkName(user.name, "user", "name"));
  if (has_password) {
    TY_ASSIGN_OR_RETURN(user.password_hash, auth::hashPassword(password, ctx.password_params));
  }
  user.created_at = ctx.clock->now();
  Status s = ctx.store->createUser(user);
  if (s.code() == StatusCode::kAlreadyExists) {
    return Status::alreadyExists("user " + user.name + " already exists");
  }
  TY_RETURN_IF_ERROR(s);
  caller.audit_detail = "created user " + user.name + (user.is_admin ? " (admin)" : "");
  writeJson(res, 201, userToJson(user, user.created_at));
  return Status::ok();
}

Status getUser(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string name = pathParam(req, 1);
  // One's own record needs only a signed-in principal; anyone else's is an
  // administrator's business.
  TY_RETURN_IF_ERROR(caller.allow(
      name == caller.user() ? Permission::kWhoami : Permission::kManageUsers, {}, "user"));
  auto user = ctx.store->getUser(name);
  if (!user.isOk()) return noSuch(user.status(), "user");
  TY_ASSIGN_OR_RETURN(auto memberships, ctx.store->membershipsOfUser(name));
  Json out = userToJson(*user, ctx.clock->now());
  out["projects"] = membershipsToJson(memberships);
  writeJson(res, 200, out);
  return Status::ok();
}

Status patchUser(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string name = pathParam(req, 1);
  TY_ASSIGN_OR_RETURN(Json body, jsonObjectBody(req));
  ObjectReader r(body, "", "body");
  std::optional<bool> admin;
  std::optional<bool> disabled;
  TY_RETURN_IF_ERROR(optionalBool(r, "admin", admin));
  TY_RETURN_IF_ERROR(optionalBool(r, "disabled", disabled));
  TY_RETURN_IF_ERROR(r.finish());
  if (!admin && !disabled) {
    return Status::invalidArgument("nothing to change: give \"admin\" or \"disabled\"", "body");
  }
  // An administrator who locks themselves out may have been the last one;
  // another administrator has to make that change.
  if (name == caller.user() && disabled.value_or(false)) {
    return Status::failedPrecondition("you cannot disable yourself; ask another administrator");
  }
  if (name == caller.user() && admin.has_value() && !*admin) {
    return Status::failedPrecondition(
        "you cannot remove your own admin rights; ask another administrator");
  }
  auto user = ctx.store->getUser(name);
  if (!user.isOk()) return noSuch(user.status(), "user");
  std::string detail;
  if (admin && *admin != user->is_admin) {
    detail = *admin ? "made " + name + " an admin" : "removed admin rights of " + name;
  }
  if (disabled && *disabled != user->disabled) {
    if (!detail.empty()) detail += "; ";
    detail += (*disabled ? "disabled user " : "enabled user ") + name;
  }
  UserChange change;
  change.is_admin = admin;
  change.disabled = disabled;
  TY_RETURN_IF_ERROR(noSuch(ctx.store->updateUser(name, change), "user"));
  user->is_admin = admin.value_or(user->is_admin);
  user->disabled = disabled.value_or(user->disabled);
  caller.audit_detail = detail.empty() ? "updated user " + name + " (no change)" : detail;
  writeJson(res, 200, userToJson(*user, ctx.clock->now()));
  return Status::ok();
}

Status setPassword(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string name = pathParam(req, 1);
  bool self = name == caller.user();
  TY_RETURN_IF_ERROR(
      caller.allow(self ? Permission::kWhoami : Permission::kManageUsers, {}, "user"));
  // A token limited to one project must not be a way to a password, which
  // signs in without that limit.
  if (caller.principal.token_project) {
    return Status::permissionDenied("a project-scoped token cannot change passwords");
  }
  TY_ASSIGN_OR_RETURN(Json body, secretBody(req));
  ObjectReader r(body, "", "body");
  std::string password;
  std::string current;
  TY_RETURN_IF_ERROR(requireString(r, "password", password));
  bool has_current = r.get("current_password") != nullptr;
  TY_RETURN_IF_ERROR(r.string("current_password", current));
  TY_RETURN_IF_ERROR(r.finish());
  TY_RETURN_IF_ERROR(auth::checkPassword(password));
  auto user = ctx.store->getUser(name);
  if (!user.isOk()) return noSuch(user.status(), "user");
  // Changing one's own password proves knowledge of the old one, so that a
  // stolen session or token cannot take the account over for good.
  if (self && !user->password_hash.empty()) {
    if (!has_current) {
      return Status::invalidArgument("required to change your own password", "current_password");
    }
    if (!auth::verifyPassword(user->password_hash, current)) {
      return Status::permissionDenied("current_password is wrong");
    }
  }
  UserChange change;
  TY_ASSIGN_OR_RETURN(change.password_hash, auth::hashPassword(password, ctx.password_params));
  // The store clears a lockout with a new password: the failures were
  // against the old one. A change that proved the old password applies only
  // while it is still the stored one.
  if (self && !user->password_hash.empty()) change.if_password_hash = user->password_hash;
  TY_RETURN_IF_ERROR(noSuch(ctx.store->updateUser(name, change), "user"));
  caller.audit_detail = self ? "changed own password" : "set password of " + name;
  writeNoContent(res);
  return Status::ok();
}

// --- projects and members -------------------------------------------------

Status listProjects(const IdentityContext& ctx, const Req&, Res& res, Caller& caller) {
  const auth::Principal& p = caller.principal;
  TY_ASSIGN_OR_RETURN(auto projects, ctx.store->listProjects());
  Json out = Json::array();
  for (const Project& project : projects) {
    auto role = p.projects.find(project.name);
    bool member = role != p.projects.end();
    // A project-scoped token sees only its project, an administrator's too.
    if (p.token_project && *p.token_project != project.name) continue;
    if (!p.is_admin && !member) continue;
    Json item = {{"name", project.name},
                 {"created_at", project.created_at},
                 {"role", member ? Json(auth::roleName(role->second)) : Json(nullptr)}};
    // The webhook URL often carries the receiver's secret: only those who
    // may change it see it.
    if (p.is_admin || (member && role->second == auth::Role::kAdmin)) {
      item["webhook_url"] = project.webhook_url;
    }
    out.push_back(std::move(item));
  }
  writeJson(res, 200, {{"projects", out}});
  return Status::ok();
}

Status createProject(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  TY_ASSIGN_OR_RETURN(Json body, jsonObjectBody(req));
  ObjectReader r(body, "", "body");
  Project project;
  TY_RETURN_IF_ERROR(requireString(r, "name", project.name));
  TY_RETURN_IF_ERROR(r.finish());
  TY_RETURN_IF_ERROR(checkName(project.name, "project", "name"));
  project.created_at = ctx.clock->now();
  Status s = ctx.store->createProject(project);
  if (s.code() == StatusCode::kAlreadyExists) {
    return Status::alreadyExists("project " + project.name + " already exists");
  }
  TY_RETURN_IF_ERROR(s);
  caller.audit_detail = "created project " + project.name;
  writeJson(res, 201, {{"name", project.name}, {"created_at", project.created_at}});
  return Status::ok();
}

// FailedPrecondition naming the jobs when `project` has any that are not
// finished: deleting it would orphan them.
Status checkNoActiveJobs(Store& store, const std::string& project) {
  constexpr JobState kStates[] = {JobState::kPending,   JobState::kScheduled, JobState::kRunning,
                                  JobState::kSucceeded, JobState::kFailed,    JobState::kCancelled,
                                  JobState::kPreempted};
  std::int64_t count = 0;
  bool more = false;
  std::string listed;
  int shown = 0;
  for (JobState state : kStates) {
    if (isTerminal(state)) continue;
    JobQuery q;
    q.state = state;
    q.project = project;
    q.limit = 1000;
    TY_ASSIGN_OR_RETURN(JobPage page, store.listJobs(q));
    count += static_cast<std::int64_t>(page.jobs.size());
    more = more || page.next_before != 0;
    for (const Job& job : page.jobs) {
      if (shown++ == 10) listed += ", ...";
      if (shown > 10) continue;
      listed += (listed.empty() ? "" : ", ") + std::to_string(job.id.value()) + " (" +
                jobStateName(job.state) + ")";
    }
  }
  if (count == 0) return Status::ok();
  return Status::failedPrecondition("project " + project + " has " + std::to_string(count) +
                                    (more ? " or more" : "") + " unfinished jobs: " + listed +
                                    "; cancel them or wait until they finish, then delete it");
}

Status deleteProject(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string name = pathParam(req, 1);
  auto project = ctx.store->getProject(name);
  if (!project.isOk()) return noSuch(project.status(), "project");
  TY_RETURN_IF_ERROR(checkNoActiveJobs(*ctx.store, name));
  TY_RETURN_IF_ERROR(noSuch(ctx.store->deleteProject(name, ctx.clock->now()), "project"));
  caller.audit_detail = "deleted project " + name;
  writeNoContent(res);
  return Status::ok();
}

// Authorizes `permission` on project `name`, then checks that it exists. In
// that order, and with one message, a project the caller may not see and one
// that does not exist answer alike.
Status projectAccess(const IdentityContext& ctx, Caller& caller, Permission permission,
                     const std::string& name) {
  TY_RETURN_IF_ERROR(caller.allow(permission, {name, ""}, "project"));
  auto project = ctx.store->getProject(name);
  return project.isOk() ? Status::ok() : noSuch(project.status(), "project");
}

// PATCH {"webhook_url": "https://..."}: where the server POSTs when one of
// the project's jobs finishes; "" or null clears it.
Status patchProject(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string name = pathParam(req, 1);
  TY_RETURN_IF_ERROR(projectAccess(ctx, caller, Permission::kManageMembers, name));
  TY_ASSIGN_OR_RETURN(Json body, jsonObjectBody(req));
  ObjectReader r(body, "", "body");
  const Json* url_json = r.get("webhook_url");
  bool present = body.contains("webhook_url");
  std::string url;
  if (url_json != nullptr) TY_RETURN_IF_ERROR(r.string("webhook_url", url));
  TY_RETURN_IF_ERROR(r.finish());
  if (!present) {
    return Status::invalidArgument("nothing to change: give webhook_url (\"\" clears it)",
                                   "webhook_url");
  }
  if (!url.empty()) TY_RETURN_IF_ERROR(checkWebhookUrl(url, "webhook_url"));
  TY_RETURN_IF_ERROR(noSuch(ctx.store->setProjectWebhook(name, url), "project"));
  TY_ASSIGN_OR_RETURN(Project project, ctx.store->getProject(name));
  // The URL itself stays out of the audit log: it may hold a secret.
  caller.audit_detail =
      url.empty() ? "cleared webhook of project " + name : "set webhook of project " + name;
  writeJson(res, 200,
            {{"name", project.name},
             {"created_at", project.created_at},
             {"webhook_url", project.webhook_url}});
  return Status::ok();
}

Status listMembers(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string project = pathParam(req, 1);
  TY_RETURN_IF_ERROR(projectAccess(ctx, caller, Permission::kReadJobs, project));
  TY_ASSIGN_OR_RETURN(auto members, ctx.store->membershipsOfProject(project));
  Json out = Json::array();
  for (const Membership& m : members) out.push_back({{"user", m.user}, {"role", m.role}});
  writeJson(res, 200, {{"members", out}});
  return Status::ok();
}

Status putMember(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string project = pathParam(req, 1);
  std::string user = pathParam(req, 2);
  TY_RETURN_IF_ERROR(projectAccess(ctx, caller, Permission::kManageMembers, project));
  TY_RETURN_IF_ERROR(checkName(user, "user", "user"));
  TY_ASSIGN_OR_RETURN(Json body, jsonObjectBody(req));
  ObjectReader r(body, "", "body");
  std::string role_text;
  TY_RETURN_IF_ERROR(requireString(r, "role", role_text));
  TY_RETURN_IF_ERROR(r.finish());
  TY_ASSIGN_OR_RETURN(auth::Role role, auth::parseRole(role_text));
  auto known = ctx.store->getUser(user);
  if (!known.isOk()) return noSuch(known.status(), "user");
  Membership m{user, project, auth::roleName(role)};
  TY_RETURN_IF_ERROR(ctx.store->putMembership(m));
  caller.audit_detail = "gave " + user + " role " + m.role + " in project " + project;
  writeJson(res, 200, {{"user", m.user}, {"project", m.project}, {"role", m.role}});
  return Status::ok();
}

Status deleteMember(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  std::string project = pathParam(req, 1);
  std::string user = pathParam(req, 2);
  TY_RETURN_IF_ERROR(projectAccess(ctx, caller, Permission::kManageMembers, project));
  Status s = ctx.store->removeMembership(user, project);
  if (s.code() == StatusCode::kNotFound) {
    return Status::notFound("user " + user + " is not a member of project " + project);
  }
  TY_RETURN_IF_ERROR(s);
  caller.audit_detail = "removed " + user + " from project " + project;
  writeNoContent(res);
  return Status::ok();
}

// --- tokens -------------------------------------------------------------------

// The user whose tokens a request is about: ?user= when given, else the
// caller.
Result<std::string> tokenOwner(const Req& req, const Caller& caller) {
  if (!req.has_param("user")) return caller.user();
  std::string owner = req.get_param_value("user");
  TY_RETURN_IF_ERROR(checkName(owner, "user", "user"));
  return owner;
}

Status listTokens(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  TY_ASSIGN_OR_RETURN(std::string owner, tokenOwner(req, caller));
  TY_RETURN_IF_ERROR(caller.allow(Permission::kManageTokens, {"", owner}, "user"));
  if (owner != caller.user()) {
    auto user = ctx.store->getUser(owner);
    if (!user.isOk()) return noSuch(user.status(), "user");
  }
  TY_ASSIGN_OR_RETURN(auto tokens, ctx.store->tokensOfUser(owner));
  Timestamp now = ctx.clock->now();
  Json out = Json::array();
  for (const ApiToken& t : tokens) out.push_back(tokenToJson(t, now));
  writeJson(res, 200, {{"tokens", out}});
  return Status::ok();
}

Status createToken(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  TY_ASSIGN_OR_RETURN(Json body, jsonObjectBody(req));
  ObjectReader r(body, "", "body");
  ApiToken spec;
  spec.user = caller.user();
  TY_RETURN_IF_ERROR(requireString(r, "name", spec.name));
  std::optional<DurationMs> expires_in;
  if (const Json* v = r.get("expires_in")) {
    TY_ASSIGN_OR_RETURN(expires_in, parseExpiresIn(*v));
  }
  bool has_project = r.get("project") != nullptr;
  TY_RETURN_IF_ERROR(r.string("project", spec.project));
  TY_RETURN_IF_ERROR(r.string("user", spec.user));
  TY_RETURN_IF_ERROR(r.finish());
  TY_RETURN_IF_ERROR(checkName(spec.user, "user", "user"));
  if (has_project) TY_RETURN_IF_ERROR(checkName(spec.project, "project", "project"));

  TY_RETURN_IF_ERROR(caller.allow(Permission::kManageTokens, {"", spec.user}, "user"));
  // A project-scoped token makes tokens for its project only, so that it
  // cannot mint itself a way out of that limit.
  if (const auto& scope = caller.principal.token_project) {
    if (!has_project) spec.project = *scope;
    if (spec.project != *scope) {
      return Status::permissionDenied("a token scoped to project " + *scope +
                                      " cannot create tokens for another project");
    }
  }
  // A project the caller cannot see reads as missing. Global administrators
  // see every project, so for them issueToken's own answer stands.
  if (!spec.project.empty() && !caller.principal.is_admin &&
      !caller.principal.projects.contains(spec.project)) {
    return Status::notFound("no such project");
  }
  Timestamp now = ctx.clock->now();
  if (expires_in) spec.expires_at = now + *expires_in;
  TY_ASSIGN_OR_RETURN(IssuedToken issued, issueToken(*ctx.store, now, spec));
  caller.audit_detail = "created token " + std::to_string(issued.token.id) + " (" +
                        issued.token.name + ") for " + issued.token.user +
                        (issued.token.project.empty() ? "" : " in project " + issued.token.project);
  Json out = tokenToJson(issued.token, now);
  out["token"] = issued.secret;
  writeJson(res, 201, out);
  return Status::ok();
}

Status revokeToken(const IdentityContext& ctx, const Req& req, Res& res, Caller& caller) {
  TY_ASSIGN_OR_RETURN(std::string owner, tokenOwner(req, caller));
  TY_RETURN_IF_ERROR(caller.allow(Permission::kManageTokens, {"", owner}, "user"));
  TY_ASSIGN_OR_RETURN(std::int64_t id, pathId(req, "token"));
  // The store revokes only a token `owner` holds: another user's id reads
  // as unknown.
  TY_RETURN_IF_ERROR(noSuch(ctx.store->revokeToken(owner, id, ctx.clock->now()), "token"));
  caller.audit_detail = "revoked token " + std::to_string(id) + " of " + owner;
  writeNoContent(res);
  return Status::ok();
}

// --- audit ----------------------------------------------------------------------

Status listAudit(const IdentityContext& ctx, const Req& req, Res& res, Caller&) {
  AuditQuery q;
  if (req.has_param("user")) {
    q.user = req.get_param_value("user");
    TY_RETURN_IF_ERROR(checkName(q.user, "user", "user"));
  }
  TY_ASSIGN_OR_RETURN(std::int64_t limit, queryInt(req, "limit", 100, 1, 1000));
  TY_ASSIGN_OR_RETURN(q.before_seq,
                      queryInt(req, "before", 0, 0, std::numeric_limits<std::int64_t>::max()));
  q.limit = static_cast<int>(limit);
  TY_ASSIGN_OR_RETURN(AuditPage page, ctx.store->listAudit(q));
  Json out = Json::array();
  for (const AuditRecord& a : page.records) {
    out.push_back({{"seq", a.seq},
                   {"at", a.at},
                   {"user", a.user},
                   {"address", a.address},
                   {"method", a.method},
                   {"path", a.path},
                   {"status", a.status},
                   {"detail", a.detail}});
  }
  writeJson(res, 200, {{"records", out}, {"next_before", timeOrNull(page.next_before)}});
  return Status::ok();
}

}  // namespace

Result<DurationMs> parseExpiresIn(const Json& value, const std::string& field) {
  auto bad = [&] {
    return Status::invalidArgument(
        "must be a duration such as \"30d\", \"12h\", \"90m\", \"45s\" or a whole number of "
        "seconds, above 0 and at most 366 days",
        field);
  };
  DurationMs ms = 0;
  if (value.is_number_integer()) {
    // Parsed JSON holds positive numbers as unsigned, built ones as signed;
    // both are read wide enough not to wrap.
    bool negative = !value.is_number_unsigned() && value.get<std::int64_t>() < 0;
    if (negative || value.get<std::uint64_t>() > static_cast<std::uint64_t>(kMaxExpiresIn / 1000)) {
      return bad();
    }
    ms = static_cast<DurationMs>(value.get<std::uint64_t>()) * 1000;
  } else if (value.is_string()) {
    const std::string text = value.get<std::string>();
    std::size_t digits = 0;
    while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) {
      ++digits;
    }
    // More than 12 digits is over the limit in any unit, and stoll below
    // stays far from overflow.
    if (digits == 0 || digits > 12) return bad();
    std::int64_t n = std::stoll(text.substr(0, digits));
    std::string unit = text.substr(digits);
    DurationMs per = unit.empty() || unit == "s" ? 1000
                     : unit == "m"               ? 60'000
                     : unit == "h"               ? 3'600'000
                     : unit == "d"               ? 86'400'000
                                                 : 0;
    if (per == 0 || n > kMaxExpiresIn / per) return bad();
    ms = n * per;
  } else {
    return bad();
  }
  if (ms <= 0 || ms > kMaxExpiresIn) return bad();
  return ms;
}

Json tokenToJson(const ApiToken& token, Timestamp now) {
  return {{"id", token.id},
          {"user", token.user},
          {"name", token.name},
          {"prefix", token.prefix},
          {"project", token.project.empty() ? Json(nullptr) : Json(token.project)},
          {"created_at", token.created_at},
          {"expires_at", timeOrNull(token.expires_at)},
          {"revoked_at", timeOrNull(token.revoked_at)},
          {"last_used_at", timeOrNull(token.last_used_at)},
          {"live", token.live(now)}};
}

namespace {

// Token names are labels shown in listings and audit lines: printable ASCII
// keeps them from hiding control characters there.
Status checkTokenName(const std::string& name) {
  bool ok = !name.empty() && name.size() <= kMaxTokenName;
  for (char c : name) ok = ok && c >= 0x20 && c <= 0x7e;
  if (ok) return Status::ok();
  return Status::invalidArgument("use 1-64 printable characters for a token name", "name");
}

}  // namespace

Result<IssuedToken> issueToken(Store& store, Timestamp now, ApiToken spec) {
  TY_RETURN_IF_ERROR(checkTokenName(spec.name));
  if (spec.expires_at != 0 && spec.expires_at <= now) {
    return Status::invalidArgument("must be in the future", "expires_at");
  }
  auto user = store.getUser(spec.user);
  if (!user.isOk()) return noSuch(user.status(), "user");
  if (!spec.project.empty()) {
    auto project = store.getProject(spec.project);
    if (!project.isOk()) return noSuch(project.status(), "project");
    // A token scoped to a project its user cannot act in would be useless;
    // global administrators act in every project.
    if (!user->is_admin) {
      TY_ASSIGN_OR_RETURN(auto memberships, store.membershipsOfUser(spec.user));
      bool member = false;
      for (const Membership& m : memberships) member = member || m.project == spec.project;
      if (!member) {
        return Status::failedPrecondition("user " + spec.user + " is not a member of project " +
                                          spec.project);
      }
    }
  }
  IssuedToken out;
  out.secret = auth::newToken();
  spec.id = 0;
  spec.hash = auth::tokenHash(out.secret);
  spec.prefix = auth::displayPrefix(out.secret);
  spec.created_at = now;
  spec.revoked_at = 0;
  spec.last_used_at = 0;
  TY_ASSIGN_OR_RETURN(out.token, store.createToken(spec));
  return out;
}

std::vector<Route> identityRoutes(const IdentityContext& ctx) {
  using A = Access;
  using P = Permission;
  const ParamDoc user_param{"name", "path", "string", "user name"};
  const ParamDoc project_param{"p", "path", "string", "project name"};
  const ParamDoc member_param{"user", "path", "string", "user name"};
  const ParamDoc owner_param{"user", "query", "string",
                             "whose tokens (default: the caller's; others' for admins only)"};
  return {
      {{"GET",
        "/api/v1/whoami",
        "The caller: user, admin flag, project roles and the credential in use",
        {},
        "",
        {200, 401}},
       A::fixed(P::kWhoami),
       wrap(ctx, whoami)},
      {{"GET", "/api/v1/users", "Every user (admins)", {}, "", {200, 401, 403}},
       A::fixed(P::kManageUsers),
       wrap(ctx, listUsers)},
      {{"POST",
        "/api/v1/users",
        "Create a user (admins)",
        {},
        "{\"name\", \"admin\"?: false, \"password\"?}",
        {201, 400, 401, 403, 409}},
       A::fixed(P::kManageUsers),
       wrap(ctx, createUser)},
      {{"GET",
        "/api/v1/users/{name}",
        "A user and their project roles (the user themselves, or admins)",
        {user_param},
        "",
        {200, 401, 403, 404}},
       A::resource(P::kManageUsers),
       wrap(ctx, getUser)},
      {{"PATCH",
        "/api/v1/users/{name}",
        "Grant or remove admin rights, disable or enable a user (admins; not oneself)",
        {user_param},
        "{\"admin\"?, \"disabled\"?}",
        {200, 400, 401, 403, 404, 409}},
       A::fixed(P::kManageUsers),
       wrap(ctx, patchUser)},
      {{"PUT",
        "/api/v1/users/{name}/password",
        "Set a password (oneself, giving current_password when one is set; or admins)",
        {user_param},
        "{\"password\", \"current_password\"?}",
        {204, 400, 401, 403, 404}},
       A::resource(P::kManageUsers),
       wrap(ctx, setPassword)},
      {{"GET",
        "/api/v1/projects",
        "Projects with the caller's role (admins: all; others: their own)",
        {},
        "",
        {200, 401}},
       A::fixed(P::kWhoami),
       wrap(ctx, listProjects)},
      {{"POST",
        "/api/v1/projects",
        "Create a project (admins)",
        {},
        "{\"name\"}",
        {201, 400, 401, 403, 409}},
       A::fixed(P::kManageProjects),
       wrap(ctx, createProject)},
      {{"DELETE",
        "/api/v1/projects/{p}",
        "Delete a project, its memberships and its tokens (admins); refused while it has "
        "unfinished jobs",
        {project_param},
        "",
        {204, 401, 403, 404, 409}},
       A::fixed(P::kManageProjects),
       wrap(ctx, deleteProject)},
      {{"PATCH",
        "/api/v1/projects/{p}",
        "Set or clear the project's webhook, POSTed when one of its jobs finishes (project "
        "admins, admins)",
        {project_param},
        "{\"webhook_url\": \"https://...\" | \"\" | null}",
        {200, 400, 401, 403, 404}},
       A::resource(P::kManageMembers),
       wrap(ctx, patchProject)},
      {{"GET",
        "/api/v1/projects/{p}/members",
        "The project's members and roles (its members, admins)",
        {project_param},
        "",
        {200, 401, 404}},
       A::resource(P::kReadJobs),
       wrap(ctx, listMembers)},
      {{"PUT",
        "/api/v1/projects/{p}/members/{user}",
        "Give a user a role in the project (project admins, admins)",
        {project_param, member_param},
        "{\"role\": \"admin\" | \"engineer\" | \"data-engineer\" | \"viewer\"}",
        {200, 400, 401, 403, 404}},
       A::resource(P::kManageMembers),
       wrap(ctx, putMember)},
      {{"DELETE",
        "/api/v1/projects/{p}/members/{user}",
        "Remove a user from the project (project admins, admins)",
        {project_param, member_param},
        "",
        {204, 401, 403, 404}},
       A::resource(P::kManageMembers),
       wrap(ctx, deleteMember)},
      {{"GET",
        "/api/v1/tokens",
        "API tokens, revoked and expired ones included; never their secrets",
        {owner_param},
        "",
        {200, 400, 401, 403, 404}},
       A::resource(P::kManageTokens),
       wrap(ctx, listTokens)},
      {{"POST",
        "/api/v1/tokens",
        "Create an API token; the answer's \"token\" is the secret, shown only here",
        {},
        "{\"name\", \"expires_in\"?: \"30d\" | \"12h\" | \"90m\" | seconds, \"project\"?, "
        "\"user\"? (admins)}",
        {201, 400, 401, 403, 404, 409}},
       A::resource(P::kManageTokens),
       wrap(ctx, createToken)},
      {{"DELETE",
        "/api/v1/tokens/{id}",
        "Revoke an API token",
        {{"id", "path", "integer", "token id"}, owner_param},
        "",
        {204, 401, 403, 404}},
       A::resource(P::kManageTokens),
       wrap(ctx, revokeToken)},
      {{"GET",
        "/api/v1/audit",
        "The audit log of changes, newest first (admins)",
        {{"user", "query", "string", "only this user's requests"},
         {"limit", "query", "integer", "page size, 1-1000 (default 100)"},
         {"before", "query", "integer", "page cursor: next_before of the previous page"}},
        "",
        {200, 400, 401, 403}},
       A::fixed(P::kReadAudit),
       wrap(ctx, listAudit)},
  };
}

}  // namespace ty
