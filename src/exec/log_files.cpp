#include "exec/log_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "exec/local/sys_util.h"

namespace ty {

namespace {

constexpr int kMaxRotatedProbe = 1000;

struct OpenLog {
  sys::UniqueFd fd;
  std::uint64_t inode = 0;
  std::int64_t size = 0;
};

Status ioError(const std::string& what, const std::string& path) {
  return Status::internal(what + " " + path + ": " + std::strerror(errno));
}

// Opens `path` read-only; ok with fd -1 when it does not exist.
Result<OpenLog> openLog(const std::string& path) {
  OpenLog log;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return log;
    return ioError("open", path);
  }
  log.fd = sys::UniqueFd(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0) return ioError("stat", path);
  log.inode = static_cast<std::uint64_t>(st.st_ino);
  log.size = st.st_size;
  return log;
}

// The log files of a run directory, newest first (output.log, .1, .2 ...).
// Missing ones are left out. Opening all of them first keeps one
// consistent set even if the supervisor rotates meanwhile.
Result<std::vector<OpenLog>> openAllLogs(const std::string& dir) {
  std::vector<OpenLog> logs;
  for (int i = 0; i < kMaxRotatedProbe; ++i) {
    TY_ASSIGN_OR_RETURN(OpenLog log, openLog(RunLayout::logPath(dir, i)));
    if (log.fd.get() < 0) {
      if (i == 0) continue;  // output.log may be between rename and re-create
      break;
    }
    logs.push_back(std::move(log));
  }
  return logs;
}

// Reads [offset, offset+len) of `fd`; short only at end of file.
Result<std::string> readAt(int fd, std::int64_t offset, std::size_t len) {
  std::string out(len, '\0');
  std::size_t got = 0;
  while (got < len) {
    ssize_t n = ::pread(fd, out.data() + got, len - got, static_cast<off_t>(offset + got));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::internal(std::string("read log: ") + std::strerror(errno));
    }
    if (n == 0) break;
    got += static_cast<std::size_t>(n);
  }
  out.resize(got);
  return out;
}

}  // namespace

Result<std::vector<ReplicaLogInfo>> listReplicaLogs(const RunLayout& layout, JobId job) {
  std::vector<ReplicaLogInfo> out;
  TY_ASSIGN_OR_RETURN(std::vector<int> attempts, layout.listAttempts(job));
  for (int a : attempts) {
    AttemptKey key{job, a};
    TY_ASSIGN_OR_RETURN(std::vector<int> replicas, layout.listReplicas(key));
    for (int r : replicas) {
      TY_ASSIGN_OR_RETURN(std::vector<OpenLog> logs, openAllLogs(layout.replicaDir(key, r)));
      if (logs.empty()) continue;
      ReplicaLogInfo info;
      info.key = key;
      info.replica = r;
      info.files = static_cast<int>(logs.size());
      for (const auto& l : logs) info.bytes += l.size;
      out.push_back(info);
    }
  }
  return out;
}

Result<std::string> tailLog(const RunLayout& layout, const AttemptKey& key, int replica,
                            std::size_t lines, std::size_t max_bytes) {
  TY_ASSIGN_OR_RETURN(std::vector<OpenLog> logs, openAllLogs(layout.replicaDir(key, replica)));
  if (logs.empty()) {
    return Status::notFound("no log for replica " + std::to_string(replica) + " of attempt " +
                            key.toString());
  }
  if (lines == 0) return std::string();
  constexpr std::size_t kBlock = 64 * 1024;
  // Collected newest-last in reverse block order, joined at the end.
  std::string text;
  std::size_t newlines = 0;
  bool first_block = true;
  bool done = false;
  bool capped = false;  // stopped at max_bytes, not at the start of the log
  for (auto& log : logs) {
    std::int64_t end = log.size;
    while (end > 0 && !done) {
      std::size_t len = static_cast<std::size_t>(std::min<std::int64_t>(end, kBlock));
      len = std::min(len, max_bytes - text.size());
      if (len == 0) {
        capped = true;
        done = true;
        break;
      }
      TY_ASSIGN_OR_RETURN(std::string block, readAt(log.fd.get(), end - len, len));
      end -= static_cast<std::int64_t>(len);
      std::size_t count = static_cast<std::size_t>(std::count(block.begin(), block.end(), '\n'));
      // A newline that ends the whole log terminates the last line; it does
      // not start a new one.
      if (first_block && !block.empty() && block.back() == '\n') --count;
      first_block = false;
      newlines += count;
      text.insert(0, block);
      if (newlines >= lines) done = true;
    }
    if (done) break;
  }
  // Keep what follows the lines-th newline from the end (not counting the
  // final one).
  std::size_t scan_end = text.size();
  if (scan_end > 0 && text.back() == '\n') --scan_end;
  std::size_t seen = 0;
  for (std::size_t i = scan_end; i-- > 0;) {
    if (text[i] == '\n' && ++seen == lines) return text.substr(i + 1);
  }
  // Cut by the byte cap: drop the partial first line.
  if (capped) {
    size_t nl = text.find('\n');
    if (nl != std::string::npos && nl + 1 < text.size()) return text.substr(nl + 1);
  }
  return text;
}

Result<LogCursor> logEndCursor(const RunLayout& layout, const AttemptKey& key, int replica) {
  TY_ASSIGN_OR_RETURN(OpenLog log, openLog(RunLayout::logPath(layout.replicaDir(key, replica), 0)));
  if (log.fd.get() < 0) return LogCursor{};
  return LogCursor{log.inode, log.size};
}

Result<LogChunk> readLogFrom(const RunLayout& layout, const AttemptKey& key, int replica,
                             LogCursor cursor, std::size_t max_bytes) {
  const std::string dir = layout.replicaDir(key, replica);
  LogChunk chunk;
  chunk.next = cursor;
  TY_ASSIGN_OR_RETURN(OpenLog current, openLog(RunLayout::logPath(dir, 0)));
  if (current.fd.get() < 0) return chunk;  // not written yet (or mid-rotation)
  std::int64_t offset = cursor.offset < 0 ? 0 : cursor.offset;
  if (cursor.inode != 0 && cursor.inode != current.inode) {
    // Rotated since the cursor was taken: finish the old file if it is
    // still among the rotated ones.
    bool found = false;
    for (int i = 1; i < kMaxRotatedProbe; ++i) {
      TY_ASSIGN_OR_RETURN(OpenLog old, openLog(RunLayout::logPath(dir, i)));
      if (old.fd.get() < 0) break;
      if (old.inode != cursor.inode) continue;
      found = true;
      if (offset < old.size) {
        std::size_t len =
            static_cast<std::size_t>(std::min<std::int64_t>(old.size - offset, max_bytes));
        TY_ASSIGN_OR_RETURN(chunk.data, readAt(old.fd.get(), offset, len));
        chunk.next = LogCursor{cursor.inode, offset + static_cast<std::int64_t>(len)};
        return chunk;
      }
      if (offset > old.size) chunk.gap = true;
      break;
    }
    if (!found) chunk.gap = true;
    offset = 0;
  } else if (offset > current.size) {
    chunk.gap = true;  // truncated under us: start over
    offset = 0;
  }
  std::size_t len =
      static_cast<std::size_t>(std::min<std::int64_t>(current.size - offset, max_bytes));
  TY_ASSIGN_OR_RETURN(chunk.data, readAt(current.fd.get(), offset, len));
  chunk.next = LogCursor{current.inode, offset + static_cast<std::int64_t>(chunk.data.size())};
  return chunk;
}

}  // namespace ty
