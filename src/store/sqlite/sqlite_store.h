// The SQLite store: the default, single-file implementation of Store.
//
// Durability: the database runs in WAL mode with synchronous=FULL by
// default, so a write call that returned ok survives a crash of the process
// and of the machine (power loss). synchronous=NORMAL is faster but may lose
// the last commits on power loss (never corrupts); choose it only where that
// is acceptable.
//
// Concurrency: one write connection, used under a mutex, with every write
// call in one BEGIN IMMEDIATE transaction; reads go through a small pool of
// read connections, which WAL lets run beside the writer and each other.
// Another process may open the same file: busy_timeout makes it wait.
//
// Ownership: openSqliteStore returns the only owner of the store, which owns
// its connections and closes them when destroyed. All methods are
// thread-safe; the store must outlive calls in flight.
#pragma once

#include <memory>
#include <string>

#include "store/store.h"

namespace ty {

struct SqliteOptions {
  bool synchronous_full = true;  // false: synchronous=NORMAL (see above)
  int busy_timeout_ms = 5000;    // how long to wait for another writer's lock
  int max_idle_readers = 4;      // read connections kept open between calls
};

// Opens (creating and migrating) the database file at `path`. Fails with
// Unavailable when the file cannot be opened or written (a missing folder,
// permissions, a full disk), Internal when it is not a database or is
// corrupt, FailedPrecondition when its schema is newer than this build.
Result<std::unique_ptr<Store>> openSqliteStore(const std::string& path,
                                               const SqliteOptions& options);

}  // namespace ty
