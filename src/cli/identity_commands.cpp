#include "cli/identity_commands.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>

#include "auth/roles.h"
#include "auth/tokens.h"
#include "cli/credentials.h"
#include "cli/table.h"

namespace ty {
namespace {

using GlobalsPtr = std::shared_ptr<Globals>;

std::string trimmed(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "default (engineer), vision (admin)" from [{"project","role"}]; "none".
std::string projectList(const Json& memberships) {
  std::string out;
  if (memberships.is_array()) {
    for (const auto& m : memberships) {
      if (!out.empty()) out += ", ";
      out += str(m, "project") + " (" + str(m, "role") + ")";
    }
  }
  return out.empty() ? "none" : out;
}

// A time field that may be null or 0 for "never".
std::int64_t msOf(const Json& j, const char* key) {
  if (!j.is_object() || !j.contains(key) || !j[key].is_number()) return 0;
  return j[key].get<std::int64_t>();
}

// The default name of the token a password login creates: "cli-<host>", so
// that `trainyard tokens` tells the machines a user logged in from apart.
// Reduced to the API's name alphabet ([a-z0-9._-], at most 64).
std::string defaultTokenName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') return "cli";
  std::string name = "cli-";
  for (const char* c = host; *c && name.size() < 64; ++c) {
    unsigned char ch = static_cast<unsigned char>(std::tolower(static_cast<unsigned char>(*c)));
    name += (std::isalnum(ch) || ch == '.' || ch == '_' || ch == '-') ? static_cast<char>(ch) : '-';
  }
  return name;
}

std::optional<CredentialStore> userStore() {
  auto store = CredentialStore::forCurrentUser();
  if (!store.isOk()) return std::nullopt;
  return *store;
}

// "true"/"false" flags of `users update`.
const std::vector<std::string> kBool = {"true", "false"};

void addLogin(CLI::App& app, const GlobalsPtr& g) {
  struct Opts {
    std::string token, user, token_name;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "login", "Log in and save an API token that later commands send (~/.config/trainyard)");
  cmd->add_option("--token", o->token,
                  "Save this existing API token instead of logging in with a password; - reads "
                  "it from stdin");
  cmd->add_option("--user", o->user, "User name (asked when not given)");
  cmd->add_option("--token-name", o->token_name,
                  "Name of the token a password login creates (default cli-<host name>)");
  cmd->callback([g, o] {
    const CliIo& io = g->io;
    CredentialStore store = orFail(*g, CredentialStore::forCurrentUser());
    ClientOptions options;
    options.base_url = orFail(*g, normalizeServerUrl(serverUrl(g->server)));
    options.ca_cert = caCertPath(g->ca_cert, options.base_url);
    // Here a 401 means a wrong password or token, not "log in first".
    options.login_hint_on_401 = false;

    std::string token;
    if (!o->token.empty()) {
      if (!o->user.empty()) usageError(*g, "--user", "give --user or --token, not both");
      token = o->token == "-" ? trimmed(orFail(*g, readSecret(io, "Token: "))) : o->token;
      if (!auth::looksLikeToken(token)) {
        fail(*g, Status::invalidArgument(
                     "is not a Trainyard API token (\"ty_\" and 43 more characters)", "--token"));
      }
    } else {
      std::string user = o->user.empty() ? trimmed(orFail(*g, readLine(io, "User: "))) : o->user;
      if (user.empty()) usageError(*g, "--user", "no user name given");
      std::string password = orFail(*g, readSecret(io, "Password for " + user + ": "));
      Json request = {{"user", user},
                      {"password", password},
                      {"mode", "token"},
                      {"token_name", o->token_name.empty() ? defaultTokenName() : o->token_name}};
      ApiClient anonymous(options);
      Json created = orFail(*g, anonymous.post("/api/v1/login", request.dump()));
      if (!created.contains("token") || !created["token"].is_string()) {
        fail(*g, Status::internal("the server's login answer holds no token"));
      }
      token = created["token"].get<std::string>();
    }

    // Check the token before saving it, and learn the user and projects to
    // show. A password login's new token is checked the same way: it proves
    // the server accepts what we are about to save.
    options.token = token;
    options.token_source = "the login";
    ApiClient client(options);
    auto me = client.get("/api/v1/whoami");
    if (!me.isOk()) {
      if (me.status().code() == StatusCode::kUnauthenticated) {
        fail(*g, Status::unauthenticated("the server refused the token (" + me.status().message() +
                                         "): it is unknown, expired or revoked"));
      }
      fail(*g, me.status());
    }
    orFail(*g, store.saveToken(token));
    orFail(*g, store.saveServer(options.base_url));
    if (options.ca_cert.empty()) {
      orFail(*g, store.removeCaCert());
    } else {
      orFail(*g, store.saveCaCert(std::filesystem::absolute(options.ca_cert).string()));
    }
    if (const char* env = std::getenv(kTokenEnv); env && *env) {
      *io.err << "note: TRAINYARD_TOKEN is set and is sent instead of the saved token; unset it "
                 "to use this login\n";
    }
    if (printStructured(*g, *me)) return;
    std::vector<std::string> names;
    for (const auto& m : (*me)["projects"]) names.push_back(str(m, "project"));
    std::string projects;
    for (const auto& n : names) projects += (projects.empty() ? "" : ", ") + n;
    *io.out << "logged in as " << str(*me, "user") << " ("
            << (me->value("admin", false) ? "global admin; " : "")
            << "projects: " << (projects.empty() ? "none" : projects) << ")\n";
  });
}

void addLogout(CLI::App& app, const GlobalsPtr& g) {
  CLI::App* cmd = app.add_subcommand(
      "logout", "Revoke the token in use at the server and remove the saved token file");
  cmd->callback([g] {
    const CliIo& io = g->io;
    std::optional<CredentialStore> store = userStore();
    auto resolved = resolveToken(store, serverUrl(g->server));
    bool revoke_failed = false;
    bool had_token = false;
    bool from_env = false;
    if (!resolved.isOk()) {
      // An unsafe or broken file is still removed below: that is what the
      // user asked for, and its token can be revoked with `tokens revoke`.
      *io.err << "warning: " << resolved.status().message() << "\n";
      had_token = true;
    } else if (resolved->has_value()) {
      had_token = true;
      from_env = (*resolved)->source == kTokenEnv;
      ClientOptions options;
      options.base_url = serverUrl(g->server);
      options.ca_cert = caCertPath(g->ca_cert, options.base_url);
      options.token = (*resolved)->token;
      options.token_source = (*resolved)->source;
      options.login_hint_on_401 = false;
      ApiClient client(options);
      auto r = client.post("/api/v1/logout", "");
      // A refused token is already unusable: logging out has nothing left to
      // do at the server.
      if (!r.isOk() && r.status().code() != StatusCode::kUnauthenticated) {
        revoke_failed = true;
        *io.err << "warning: the server did not revoke the token (" << r.status().message()
                << "); it stays valid until it expires or is revoked with `trainyard tokens "
                   "revoke`\n";
      }
    }
    if (store) orFail(*g, store->removeToken());
    if (g->output == "table") *io.out << (had_token ? "logged out\n" : "not logged in\n");
    if (from_env) *io.err << "note: TRAINYARD_TOKEN is still set; unset it\n";
    if (revoke_failed && io.exit) io.exit(1);
  });
}

void addWhoami(CLI::App& app, const GlobalsPtr& g) {
  CLI::App* cmd = app.add_subcommand("whoami", "The user, projects and token this CLI acts as");
  cmd->callback([g] {
    auto client = connect(*g);
    Json me = orFail(*g, client->get("/api/v1/whoami"));
    if (printStructured(*g, me)) return;
    std::ostream& out = *g->io.out;
    out << "User:      " << str(me, "user") << (me.value("admin", false) ? " (global admin)" : "")
        << "\n";
    out << "Projects:  " << projectList(me["projects"]) << "\n";
    const Json& a = me.contains("auth") ? me["auth"] : Json::object();
    if (str(a, "kind") == "token") {
      std::int64_t expires = msOf(a, "expires_at");
      out << "Token:     " << str(a, "token_name") << " (id " << str(a, "token_id") << ")"
          << (a.contains("project") && a["project"].is_string()
                  ? ", only project " + a["project"].get<std::string>()
                  : "")
          << ", expires " << (expires > 0 ? localTime(expires) : "never") << "\n";
    } else if (a.is_object() && a.contains("kind")) {
      out << "Session:   " << str(a, "kind") << "\n";
    }
    out << "Server:    " << client->baseUrl() << "\n";
  });
}

void addPasswd(CLI::App& app, const GlobalsPtr& g) {
  auto user = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "passwd", "Change your password, or another user's (global admins: --user)");
  cmd->add_option("--user", *user, "Whose password (default: yours)");
  cmd->callback([g, user] {
    const CliIo& io = g->io;
    auto client = connect(*g);
    Json me = orFail(*g, client->get("/api/v1/whoami"));
    std::string self = str(me, "user");
    std::string target = user->empty() ? self : *user;
    std::string path = "/api/v1/users/" + queryEncode(target);
    Json request = Json::object();
    if (target == self) {
      // The server wants the current password from a user who has one, so
      // a stolen token alone cannot take over the account.
      Json account = orFail(*g, client->get(path));
      if (account.value("has_password", false)) {
        request["current_password"] = orFail(*g, readSecret(io, "Current password: "));
      }
    }
    std::string password = orFail(*g, readSecret(io, "New password: "));
    if (password.empty()) usageError(*g, "password", "the new password is empty");
    // Typed blind, a password is asked twice; from a pipe, once is exact.
    if (io.in_is_terminal) {
      std::string again = orFail(*g, readSecret(io, "New password again: "));
      if (again != password) {
        fail(*g, Status::invalidArgument("the two new passwords differ; nothing was changed"));
      }
    }
    request["password"] = password;
    orFail(*g, client->put(path + "/password", request.dump()));
    if (g->output == "table") *io.out << "password changed for " << target << "\n";
  });
}

std::string lockedText(const Json& u) {
  std::int64_t until = msOf(u, "locked_until");
  return until > nowMs() ? "until " + localTime(until) : "-";
}

void addUsers(CLI::App& app, const GlobalsPtr& g) {
  CLI::App* cmd = app.add_subcommand("users", "List users; create or update one (global admins)");
  cmd->callback([g, cmd] {
    if (!cmd->get_subcommands().empty()) return;
    auto client = connect(*g);
    Json page = orFail(*g, client->get("/api/v1/users"));
    if (printStructured(*g, page)) return;
    Table t({"NAME", "ADMIN", "DISABLED", "PASSWORD", "CREATED", "LOCKED"});
    for (const auto& u : page["users"]) {
      t.add({str(u, "name"), u.value("admin", false) ? "yes" : "no",
             u.value("disabled", false) ? "yes" : "no",
             u.value("has_password", false) ? "set" : "-", localTime(msOf(u, "created_at")),
             lockedText(u)});
    }
    t.print(*g->io.out);
  });

  struct CreateOpts {
    std::string name;
    bool admin = false;
    bool password_stdin = false;
  };
  auto c = std::make_shared<CreateOpts>();
  CLI::App* create = cmd->add_subcommand("create", "Create a user");
  create->add_option("NAME", c->name, "User name: 1-64 of a-z 0-9 . _ -")->required();
  create->add_flag("--admin", c->admin, "Make the user a global admin");
  create->add_flag("--password-stdin", c->password_stdin,
                   "Read the user's password from stdin (without it the user has none and "
                   "signs in with tokens)");
  create->callback([g, c] {
    Json request = {{"name", c->name}, {"admin", c->admin}};
    if (c->password_stdin) {
      std::string password = orFail(*g, readSecret(g->io, "Password for " + c->name + ": "));
      if (password.empty()) usageError(*g, "--password-stdin", "the password is empty");
      request["password"] = password;
    }
    auto client = connect(*g);
    Json user = orFail(*g, client->post("/api/v1/users", request.dump()));
    if (printStructured(*g, user)) return;
    *g->io.out << "created user " << str(user, "name")
               << (user.value("admin", false) ? " (global admin)" : "") << "\n";
  });

  struct UpdateOpts {
    std::string name, admin, disabled;
  };
  auto u = std::make_shared<UpdateOpts>();
  CLI::App* update = cmd->add_subcommand("update", "Change a user's admin or disabled flag");
  update->add_option("NAME", u->name, "User name")->required();
  update->add_option("--admin", u->admin, "true or false")->check(CLI::IsMember(kBool));
  update->add_option("--disabled", u->disabled, "true or false: a disabled user cannot sign in")
      ->check(CLI::IsMember(kBool));
  update->callback([g, u] {
    Json request = Json::object();
    if (!u->admin.empty()) request["admin"] = u->admin == "true";
    if (!u->disabled.empty()) request["disabled"] = u->disabled == "true";
    if (request.empty()) usageError(*g, "update", "give --admin or --disabled");
    auto client = connect(*g);
    Json user = orFail(*g, client->patch("/api/v1/users/" + queryEncode(u->name), request.dump()));
    if (printStructured(*g, user)) return;
    *g->io.out << "updated user " << str(user, "name") << ": admin "
               << (user.value("admin", false) ? "yes" : "no") << ", disabled "
               << (user.value("disabled", false) ? "yes" : "no") << "\n";
  });
}

void addProjects(CLI::App& app, const GlobalsPtr& g) {
  CLI::App* cmd = app.add_subcommand(
      "projects", "List your projects (global admins: all); create, update or delete one");
  cmd->callback([g, cmd] {
    if (!cmd->get_subcommands().empty()) return;
    auto client = connect(*g);
    Json page = orFail(*g, client->get("/api/v1/projects"));
    if (printStructured(*g, page)) return;
    Table t({"NAME", "ROLE", "CREATED"});
    for (const auto& p : page["projects"]) {
      t.add({str(p, "name"), str(p, "role"), localTime(msOf(p, "created_at"))});
    }
    t.print(*g->io.out);
  });

  auto create_name = std::make_shared<std::string>();
  CLI::App* create = cmd->add_subcommand("create", "Create a project (global admins)");
  create->add_option("NAME", *create_name, "Project name: 1-64 of a-z 0-9 . _ -")->required();
  create->callback([g, create_name] {
    auto client = connect(*g);
    Json project =
        orFail(*g, client->post("/api/v1/projects", Json({{"name", *create_name}}).dump()));
    if (printStructured(*g, project)) return;
    *g->io.out << "created project " << str(project, "name") << "\n";
  });

  struct UpdateOpts {
    std::string name;
    std::optional<std::string> webhook;
  };
  auto update = std::make_shared<UpdateOpts>();
  CLI::App* upd =
      cmd->add_subcommand("update", "Change a project's settings (project admins, global admins)");
  upd->add_option("NAME", update->name, "Project name")->required();
  upd->add_option("--webhook", update->webhook,
                  "URL POSTed when one of the project's jobs finishes (http or https); \"\" "
                  "clears it")
      ->required();
  upd->callback([g, update] {
    auto client = connect(*g);
    Json body = {{"webhook_url", update->webhook.value_or("")}};
    Json project =
        orFail(*g, client->patch("/api/v1/projects/" + queryEncode(update->name), body.dump()));
    if (printStructured(*g, project)) return;
    std::string url = str(project, "webhook_url");
    *g->io.out << "project " << str(project, "name")
               << (url.empty() ? ": webhook cleared" : ": webhook set to " + url) << "\n";
  });

  auto delete_name = std::make_shared<std::string>();
  CLI::App* del = cmd->add_subcommand(
      "delete", "Delete a project (global admins; refused while it has pending or running jobs)");
  del->add_option("NAME", *delete_name, "Project name")->required();
  del->callback([g, delete_name] {
    auto client = connect(*g);
    orFail(*g, client->del("/api/v1/projects/" + queryEncode(*delete_name)));
    if (g->output == "table") *g->io.out << "deleted project " << *delete_name << "\n";
  });
}

void addMembers(CLI::App& app, const GlobalsPtr& g) {
  struct Opts {
    std::string project, user, role;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("members", "A project's members and roles; add or remove one");
  cmd->add_option("PROJECT", o->project, "Project")->required();
  auto members_path = [o] { return "/api/v1/projects/" + queryEncode(o->project) + "/members"; };
  cmd->callback([g, cmd, members_path] {
    if (!cmd->get_subcommands().empty()) return;
    auto client = connect(*g);
    Json page = orFail(*g, client->get(members_path()));
    if (printStructured(*g, page)) return;
    Table t({"USER", "ROLE"});
    for (const auto& m : page["members"]) t.add({str(m, "user"), str(m, "role")});
    t.print(*g->io.out);
  });

  CLI::App* add = cmd->add_subcommand("add", "Add a member, or change a member's role");
  add->add_option("USER", o->user, "User")->required();
  add->add_option("ROLE", o->role, "admin, engineer, data-engineer or viewer")->required();
  add->callback([g, o, members_path] {
    // Checked here too so that a typo is answered without a round trip and
    // with the list of roles.
    if (!auth::parseRole(o->role).isOk()) {
      usageError(*g, "ROLE",
                 "\"" + o->role + "\" is not a role: admin, engineer, data-engineer or viewer");
    }
    auto client = connect(*g);
    Json member = orFail(*g, client->put(members_path() + "/" + queryEncode(o->user),
                                         Json({{"role", o->role}}).dump()));
    if (printStructured(*g, member)) return;
    *g->io.out << str(member, "user") << " is " << str(member, "role") << " in "
               << str(member, "project") << "\n";
  });

  CLI::App* remove = cmd->add_subcommand("remove", "Remove a member");
  remove->add_option("USER", o->user, "User")->required();
  remove->callback([g, o, members_path] {
    auto client = connect(*g);
    orFail(*g, client->del(members_path() + "/" + queryEncode(o->user)));
    if (g->output == "table") {
      *g->io.out << "removed " << o->user << " from " << o->project << "\n";
    }
  });
}

std::string tokenState(const Json& t) {
  if (msOf(t, "revoked_at") > 0) return "revoked";
  return t.value("live", false) ? "live" : "expired";
}

void addTokens(CLI::App& app, const GlobalsPtr& g) {
  auto list_user = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "tokens", "List your API tokens (global admins: --user); create or revoke");
  cmd->add_option("--user", *list_user, "Whose tokens (global admins)");
  cmd->callback([g, cmd, list_user] {
    if (!cmd->get_subcommands().empty()) return;
    std::string path = "/api/v1/tokens";
    if (!list_user->empty()) path += "?user=" + queryEncode(*list_user);
    auto client = connect(*g);
    Json page = orFail(*g, client->get(path));
    if (printStructured(*g, page)) return;
    Table t(
        {"ID", "NAME", "USER", "PREFIX", "PROJECT", "CREATED", "EXPIRES", "LAST USED", "STATE"});
    for (const auto& tok : page["tokens"]) {
      std::int64_t expires = msOf(tok, "expires_at");
      t.add({str(tok, "id"), str(tok, "name"), str(tok, "user"), "ty_" + str(tok, "prefix") + "...",
             str(tok, "project"), localTime(msOf(tok, "created_at")),
             expires > 0 ? localTime(expires) : "never", localTime(msOf(tok, "last_used_at")),
             tokenState(tok)});
    }
    t.print(*g->io.out);
  });

  struct CreateOpts {
    std::string name, expires_in, project, user;
  };
  auto c = std::make_shared<CreateOpts>();
  CLI::App* create = cmd->add_subcommand(
      "create", "Create an API token; its secret is printed once and never again");
  create->add_option("NAME", c->name, "Token name, e.g. ci-pipeline")->required();
  create->add_option("--expires-in", c->expires_in,
                     "Lifetime: 30d, 12h, 90m or seconds (default: never expires)");
  create->add_option("--project", c->project, "Limit the token to this project");
  create->add_option("--user", c->user, "Create it for this user (global admins)");
  create->callback([g, c] {
    Json request = {{"name", c->name}};
    if (!c->expires_in.empty()) {
      bool seconds = std::all_of(c->expires_in.begin(), c->expires_in.end(),
                                 [](unsigned char ch) { return std::isdigit(ch); });
      if (seconds) {
        request["expires_in"] = std::stoll(c->expires_in);
      } else {
        request["expires_in"] = c->expires_in;
      }
    }
    if (!c->project.empty()) request["project"] = c->project;
    if (!c->user.empty()) request["user"] = c->user;
    auto client = connect(*g);
    Json created = orFail(*g, client->post("/api/v1/tokens", request.dump()));
    if (printStructured(*g, created)) return;
    std::int64_t expires = msOf(created, "expires_at");
    // The secret alone on stdout, so that `$(trainyard tokens create ci)`
    // captures exactly it; the notes go to stderr.
    *g->io.err << "created token " << str(created, "name") << " (id " << str(created, "id")
               << ") for " << str(created, "user")
               << (created.contains("project") && created["project"].is_string()
                       ? ", only project " + created["project"].get<std::string>()
                       : "")
               << ", expires " << (expires > 0 ? localTime(expires) : "never") << ":\n";
    *g->io.out << str(created, "token") << "\n";
    *g->io.err << "Copy it now: it will not be shown again.\n";
  });

  struct RevokeOpts {
    std::string id, user;
  };
  auto r = std::make_shared<RevokeOpts>();
  CLI::App* revoke = cmd->add_subcommand("revoke", "Revoke an API token; it stops working at once");
  revoke->add_option("ID", r->id, "Token id (see `trainyard tokens`)")->required();
  revoke->add_option("--user", r->user, "Whose token (global admins)");
  revoke->callback([g, r] {
    std::string path = "/api/v1/tokens/" + queryEncode(r->id);
    if (!r->user.empty()) path += "?user=" + queryEncode(r->user);
    auto client = connect(*g);
    orFail(*g, client->del(path));
    if (g->output == "table") *g->io.out << "revoked token " << r->id << "\n";
  });
}

void addAudit(CLI::App& app, const GlobalsPtr& g) {
  struct Opts {
    std::string user;
    int limit = 50;
    std::int64_t before = 0;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand("audit", "The audit log, newest first (global admins)");
  cmd->add_option("--user", o->user, "Only this user's requests");
  cmd->add_option("--limit", o->limit, "At most this many")->check(CLI::Range(1, 1000));
  cmd->add_option("--before", o->before, "Only records older than this sequence number")
      ->check(CLI::PositiveNumber);
  cmd->callback([g, o] {
    std::string path = "/api/v1/audit?limit=" + std::to_string(o->limit);
    if (!o->user.empty()) path += "&user=" + queryEncode(o->user);
    if (o->before > 0) path += "&before=" + std::to_string(o->before);
    auto client = connect(*g);
    Json page = orFail(*g, client->get(path));
    if (printStructured(*g, page)) return;
    Table t({"TIME", "USER", "ADDRESS", "METHOD", "PATH", "STATUS", "DETAIL"});
    for (const auto& rec : page["records"]) {
      t.add({localTime(msOf(rec, "at")), str(rec, "user"), str(rec, "address"), str(rec, "method"),
             str(rec, "path"), str(rec, "status"), str(rec, "detail")});
    }
    t.print(*g->io.out);
    if (page.contains("next_before") && page["next_before"].is_number()) {
      *g->io.err << "older records: trainyard audit --before " << page["next_before"].dump()
                 << "\n";
    }
  });
}

}  // namespace

void addIdentityCommands(CLI::App& app, const std::shared_ptr<Globals>& g) {
  addLogin(app, g);
  addLogout(app, g);
  addWhoami(app, g);
  addPasswd(app, g);
  addUsers(app, g);
  addProjects(app, g);
  addMembers(app, g);
  addTokens(app, g);
  addAudit(app, g);
}

}  // namespace ty
