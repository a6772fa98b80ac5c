// Reading replica logs written by the local executor's supervisor, for the
// API: which replicas have logs, the last N lines, and new bytes since a
// cursor for live follow. Paths come from RunLayout.
//
// The supervisor writes output.log and rotates it by renaming
// output.log -> output.log.1 -> output.log.2 ...; readers never block it.
// Free functions, no shared state: thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "exec/run_layout.h"

namespace ty {

struct ReplicaLogInfo {
  AttemptKey key;
  int replica = 0;
  std::int64_t bytes = 0;  // over output.log and its rotated files
  int files = 0;           // output.log plus rotated files present
};

// Every (attempt, replica) of `job` that has at least one log file,
// ordered by attempt then replica. A job without logs gives an empty list;
// I/O errors give Internal.
Result<std::vector<ReplicaLogInfo>> listReplicaLogs(const RunLayout& layout, JobId job);

// The last `lines` lines of the replica's log, across rotated files, at
// most `max_bytes` bytes (the newest ones). A missing log gives NotFound.
Result<std::string> tailLog(const RunLayout& layout, const AttemptKey& key, int replica,
                            std::size_t lines, std::size_t max_bytes = 4u << 20);

// Position in a replica's log for live follow. inode 0 means "the current
// output.log, whichever file that is"; a plain byte offset from a client
// therefore works as {0, offset}.
struct LogCursor {
  std::uint64_t inode = 0;
  std::int64_t offset = 0;
  bool operator==(const LogCursor&) const = default;
};

struct LogChunk {
  std::string data;
  LogCursor next;    // pass back to continue
  bool gap = false;  // bytes were rotated away (or the file truncated) unread
};

// The cursor at the current end of the log (follow from now). A log that
// does not exist yet gives {0, 0}. I/O errors give Internal.
Result<LogCursor> logEndCursor(const RunLayout& layout, const AttemptKey& key, int replica);

// Up to `max_bytes` bytes after `cursor`. When output.log was rotated since
// the cursor was taken, the rest of the rotated file is returned first, then
// the new output.log from its start. No new bytes: empty data, same cursor.
// A log that does not exist yet is empty, not an error; I/O errors give
// Internal.
Result<LogChunk> readLogFrom(const RunLayout& layout, const AttemptKey& key, int replica,
                             LogCursor cursor, std::size_t max_bytes = 1u << 20);

}  // namespace ty
