// Db and Stmt: a thin, non-throwing wrapper over one SQLite connection and
// its cache of prepared statements, used by the SQLite store.
//
// Ownership: a Db owns its sqlite3 handle and every statement it prepared;
// a Stmt borrows one cached statement and resets it (clearing bindings)
// when destroyed, so it must not outlive its Db. Thread-safety: a Db and its
// Stmts are used by one thread at a time (the store's locks see to that);
// connections are opened with SQLITE_OPEN_NOMUTEX.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/status.h"

namespace ty::sqlite {

// Maps an SQLite result code to a Status: busy, locked, I/O and open
// failures become Unavailable (worth a retry, or an operator's look at the
// disk), the rest Internal. The message is "<what>: <sqlite message>".
Status errorStatus(int rc, std::string_view what, sqlite3* db = nullptr);

class Db;

// A borrowed, cached prepared statement. Bind errors are remembered and
// reported by the next step(). Columns and parameters count from 0 and 1 as
// in SQLite.
class Stmt {
 public:
  Stmt(Db* db, sqlite3_stmt* stmt, bool* in_use) : db_(db), stmt_(stmt), in_use_(in_use) {}
  Stmt(Stmt&& other) noexcept;
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt();

  void bind(int index, std::int64_t value);
  void bind(int index, double value);
  void bind(int index, const std::string& value);
  void bind(int index, std::optional<int> value);  // nullopt binds NULL

  // Runs to the next row: true with a row to read, false when done.
  Result<bool> step();
  // Runs a statement that returns no rows.
  Status run();

  std::int64_t int64(int column) const;
  double real(int column) const;
  std::string text(int column) const;
  std::optional<int> optionalInt(int column) const;

 private:
  Db* db_;
  sqlite3_stmt* stmt_;
  bool* in_use_;
  int bind_rc_ = SQLITE_OK;
};

class Db {
 public:
  // Opens `path` with `flags` (SQLITE_OPEN_*; NOMUTEX is added) and turns on
  // extended result codes. Fails with the path and SQLite's reason.
  static Result<std::unique_ptr<Db>> open(const std::string& path, int flags);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  // Runs SQL text that takes no parameters (pragmas, DDL, BEGIN/COMMIT).
  Status exec(const char* sql);
  // The cached statement for `sql`, prepared on first use. Aborts if the
  // same statement is borrowed twice at once (a bug in the caller).
  Result<Stmt> prepare(const std::string& sql);
  // The status for `rc` with this connection's last error message.
  Status error(int rc, std::string_view what) { return errorStatus(rc, what, db_); }
  sqlite3* raw() { return db_; }

 private:
  explicit Db(sqlite3* db) : db_(db) {}
  struct Cached {
    sqlite3_stmt* stmt = nullptr;
    bool in_use = false;
  };
  sqlite3* db_;
  std::unordered_map<std::string, Cached> cache_;
};

}  // namespace ty::sqlite
