// Identity records of the Store: users, projects, memberships, API tokens
// and the audit log, and the part of the Store interface that keeps them.
//
// The store keeps these as plain values and checks only what it must to
// stay consistent (unique names and token hashes, references to existing
// users and projects, name syntax). Deciding who may do what, hashing
// passwords and tokens, and counting failed logins belong to src/auth and
// the API; the store never sees a password or a token in clear, and an
// audit record's detail must never carry one.
//
// Thread-safety and atomicity are the Store's: every method is thread-safe
// and every write call is one transaction.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/time.h"

namespace ty {

// A person or a service account. `name` is the key: 1-64 characters of
// [a-z0-9._-], so that it is safe in URLs, paths and log lines unquoted.
struct User {
  std::string name;
  std::string password_hash;  // argon2id string; empty: no password set (cannot log in)
  bool is_admin = false;
  Timestamp created_at = 0;
  bool disabled = false;
  int failed_logins = 0;       // consecutive failures since the last success
  Timestamp locked_until = 0;  // 0: not locked
  bool operator==(const User&) const = default;
};

// A project, named like a user. Jobs name their project by this name.
struct Project {
  std::string name;
  Timestamp created_at = 0;
  // Where the server POSTs when one of the project's jobs finishes (an
  // http(s) URL the API checked); empty: nowhere.
  std::string webhook_url{};
  bool operator==(const Project&) const = default;
};

// `user` holds `role` in `project`. One role per (user, project); the role
// names are the API's ("viewer", "member", "admin", ...), opaque here.
struct Membership {
  std::string user;
  std::string project;
  std::string role;
  bool operator==(const Membership&) const = default;
};

// An API token. Only a hash of the secret is stored (hex, unique); `prefix`
// is the first few characters of the secret, kept to tell tokens apart in
// listings.
struct ApiToken {
  std::int64_t id = 0;  // assigned by the store; increasing, never reused
  std::string user;
  std::string name;  // the owner's label ("laptop", "ci")
  std::string hash;
  std::string prefix;
  std::string project;  // empty: every project the user is a member of
  Timestamp created_at = 0;
  Timestamp expires_at = 0;    // 0: never
  Timestamp revoked_at = 0;    // 0: not revoked
  Timestamp last_used_at = 0;  // 0: never used
  // Not revoked and not expired at `now` (expiry is exclusive: a token with
  // expires_at == now is expired).
  bool live(Timestamp now) const {
    return revoked_at == 0 && (expires_at == 0 || now < expires_at);
  }
  bool operator==(const ApiToken&) const = default;
};

// One mutating request, as the API saw it.
struct AuditRecord {
  std::int64_t seq = 0;  // assigned by the store; increasing, never reused
  Timestamp at = 0;
  std::string user;     // empty: not authenticated
  std::string address;  // the client's address
  std::string method;
  std::string path;
  int status = 0;      // the HTTP status answered
  std::string detail;  // short, human-readable; never a secret
  bool operator==(const AuditRecord&) const = default;
};

// A change to some fields of one user; fields left unset keep their stored
// value, so concurrent changes to other fields are never undone.
struct UserChange {
  std::optional<std::string> password_hash;  // also clears failed_logins and locked_until
  // Apply only while the stored password hash is this one (a rehash after a
  // login, or a change that verified the current password).
  std::optional<std::string> if_password_hash;
  std::optional<bool> is_admin;
  std::optional<bool> disabled;
  std::optional<Timestamp> locked_until;
};

struct AuditQuery {
  std::string user;             // empty: any
  int limit = 100;              // 1..1000
  std::int64_t before_seq = 0;  // page cursor: only seqs below this; 0: from newest
};

struct AuditPage {
  std::vector<AuditRecord> records;  // newest first
  std::int64_t next_before = 0;      // cursor for the next page; 0: no more
};

// 1-64 characters of [a-z0-9._-]: the rule for user and project names.
bool validIdentityName(const std::string& name);

// The identity half of the Store interface (Store derives from it).
// Errors, unless a method says otherwise: InvalidArgument for a bad input
// (with the field), NotFound for a missing row, AlreadyExists for a unique
// name or hash taken (the message names the field), Unavailable/Internal
// for storage failures. Lists of something that does not exist are empty,
// not NotFound.
class IdentityStore {
 public:
  virtual ~IdentityStore() = default;

  // --- Users -------------------------------------------------------------
  // Stores a new user. AlreadyExists when the name is taken.
  virtual Status createUser(const User& user) = 0;
  virtual Result<User> getUser(const std::string& name) = 0;
  // Every user, by name.
  virtual Result<std::vector<User>> listUsers() = 0;
  // Applies `change` to user `name` in one transaction. NotFound when there
  // is no such user; FailedPrecondition when if_password_hash no longer
  // matches, or when the change would leave no enabled global admin (so the
  // last one cannot be disabled or demoted, by themselves or by a race of
  // two admins demoting each other).
  virtual Status updateUser(const std::string& name, const UserChange& change) = 0;

  // --- Projects and memberships -------------------------------------------
  // AlreadyExists when the name is taken.
  virtual Status createProject(const Project& project) = 0;
  virtual Result<Project> getProject(const std::string& name) = 0;
  // Every project, by name.
  virtual Result<std::vector<Project>> listProjects() = 0;
  // Sets the project's webhook_url (empty clears it). The URL's form is the
  // caller's to check. NotFound when there is no such project.
  virtual Status setProjectWebhook(const std::string& name, const std::string& url) = 0;
  // Deletes the project, its memberships, and revokes (revoked_at = now)
  // the live tokens scoped to it, so that a later project of the same name
  // does not inherit them. NotFound when there is no such project. Whether
  // the project may go (active jobs) is the caller's decision.
  virtual Status deleteProject(const std::string& name, Timestamp now) = 0;
  // Grants `m.role` to `m.user` in `m.project`, replacing a role held
  // before. NotFound when the user or the project does not exist;
  // InvalidArgument for an empty role.
  virtual Status putMembership(const Membership& m) = 0;
  // NotFound when the user holds no role in the project.
  virtual Status removeMembership(const std::string& user, const std::string& project) = 0;
  // The user's memberships, by project.
  virtual Result<std::vector<Membership>> membershipsOfUser(const std::string& user) = 0;
  // The project's memberships, by user.
  virtual Result<std::vector<Membership>> membershipsOfProject(const std::string& project) = 0;

  // --- API tokens ---------------------------------------------------------
  // Stores a new token and returns it with its id. `id`, `revoked_at` and
  // `last_used_at` of the argument are ignored (a new token is live and
  // unused). AlreadyExists when the hash is taken; NotFound when the user,
  // or the project it is scoped to, does not exist; InvalidArgument for an
  // empty hash.
  virtual Result<ApiToken> createToken(const ApiToken& token) = 0;
  // The token with this hash if it is live at `now` (not revoked, not
  // expired); nullopt otherwise, so that a revoked or expired token reads
  // exactly like an unknown one. The owner's state (disabled, locked) and
  // memberships are the caller's to check.
  virtual Result<std::optional<ApiToken>> findTokenByHash(const std::string& hash,
                                                          Timestamp now) = 0;
  // Every token of `user`, revoked and expired ones included, by id.
  virtual Result<std::vector<ApiToken>> tokensOfUser(const std::string& user) = 0;
  // Marks the token revoked at `now`. Revoking a revoked token keeps its
  // first revoked_at and succeeds. NotFound unless `user` owns a token with
  // this id (so a caller cannot revoke someone else's token by its id).
  virtual Status revokeToken(const std::string& user, std::int64_t id, Timestamp now) = 0;
  // Records a use at `now` (last_used_at never moves backwards). NotFound
  // when there is no such token.
  virtual Status touchToken(std::int64_t id, Timestamp now) = 0;

  // --- Audit log ----------------------------------------------------------
  // Appends the record and returns its seq (`record.seq` is ignored).
  virtual Result<std::int64_t> appendAudit(const AuditRecord& record) = 0;
  // Records newest first, paged by seq. InvalidArgument for a limit
  // outside 1..1000 or a negative cursor.
  virtual Result<AuditPage> listAudit(const AuditQuery& query) = 0;
};

}  // namespace ty
