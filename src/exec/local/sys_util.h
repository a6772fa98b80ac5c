// Small wrappers over Linux system calls shared by the local executor and
// its supervisor: files written atomically, /proc start times, pidfds,
// running a helper command. Internal to exec/local. Free functions without
// shared state: thread-safe.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

namespace ty::sys {

// Closes the descriptor when it goes out of scope.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) reset(o.release());
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd() { reset(); }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd = -1);

 private:
  int fd_ = -1;
};

// Internal error "<what> <path>: <strerror(errno)>".
Status errnoStatus(const std::string& what, const std::string& path = {});

// Creates `path` and its parents (mode 0755). Internal on failure.
Status makeDirs(const std::string& path);
bool fileExists(const std::string& path);
// The whole file. NotFound when it does not exist, Internal on other errors.
Result<std::string> readFile(const std::string& path);
// Writes `content` to path.tmp, fsyncs, renames over `path`, fsyncs the
// directory: readers see the old file or the whole new one, also after a
// crash. The file gets `mode` (0600 for secrets). Internal on failure.
Status writeFileAtomic(const std::string& path, const std::string& content, mode_t mode = 0644);
// Writes `content` into an existing file (cgroup and /proc knobs).
Status writeExisting(const std::string& path, const std::string& content);

// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot);
// nullopt when the process does not exist.
std::optional<std::uint64_t> processStartTime(pid_t pid);
// pidfd_open(2); -1 with errno on failure.
int pidfdOpen(pid_t pid);

// "SIGTERM" for 15; "signal 64" when the number has no name.
std::string signalName(int sig);

// Full path of `name` on `path_env` (colon list), or `name` itself when it
// contains a slash and is executable. NotFound when absent.
Result<std::string> findExecutable(const std::string& name, const std::string& path_env);

// Runs argv[0] (searched on PATH) with stdin/stdout/stderr on /dev/null and
// waits up to `timeout_ms` for it; after that it is killed. Returns its
// exit code (128+signal when killed). Internal when it cannot be started.
Result<int> runCommand(const std::vector<std::string>& argv, int timeout_ms);

// Monotonic milliseconds, for deadlines.
std::int64_t monotonicMs();

}  // namespace ty::sys
