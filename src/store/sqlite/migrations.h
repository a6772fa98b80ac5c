// The SQLite store's schema history and the code that applies it.
//
// The schema only moves forward: each Migration is a numbered step of SQL,
// applied once, in order, each in its own transaction, and recorded in
// schema_migrations(version, applied_at). To change the schema, append a
// step to storeMigrations(); never edit one that has shipped. Stateless and
// thread-safe; migrate() needs exclusive use of the Db it is given.
#pragma once

#include <span>

#include "common/status.h"
#include "common/time.h"
#include "store/sqlite/sqlite_db.h"

namespace ty::sqlite {

struct Migration {
  int version;      // 1, 2, 3 ... without gaps
  const char* sql;  // one or more statements, no parameters
};

// Every step of the store's schema, oldest first.
std::span<const Migration> storeMigrations();

// The highest version recorded in `db`; 0 for a new database.
Result<int> schemaVersion(Db& db);

// Applies each step of `steps` newer than the database's version, recording
// `now` as its applied_at. A failing step is rolled back and reported with
// its version; the steps before it stay applied. A database newer than the
// newest step fails with FailedPrecondition (an older binary must not write
// to it). Aborts if `steps` are not numbered 1, 2, 3 ...
Status migrate(Db& db, std::span<const Migration> steps, Timestamp now);

}  // namespace ty::sqlite
