#include "exec/local/sys_util.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace ty::sys {

void UniqueFd::reset(int fd) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
}

Status errnoStatus(const std::string& what, const std::string& path) {
  std::string msg = what;
  if (!path.empty()) msg += " " + path;
  return Status::internal(msg + ": " + std::strerror(errno));
}

Status makeDirs(const std::string& path) {
  if (path.empty()) return Status::invalidArgument("empty directory path");
  std::string partial;
  size_t pos = 0;
  while (pos != std::string::npos) {
    pos = path.find('/', pos + 1);
    partial = path.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0755) != 0 && errno != EEXIST) {
      return errnoStatus("create directory", partial);
    }
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return errnoStatus("stat", path);
  if (!S_ISDIR(st.st_mode)) return Status::internal(path + " exists and is not a directory");
  return Status::ok();
}

bool fileExists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

Result<std::string> readFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    if (errno == ENOENT) return Status::notFound(path + " does not exist");
    return errnoStatus("open", path);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoStatus("read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

namespace {

Status writeAll(int fd, const std::string& content, const std::string& path) {
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errnoStatus("write", path);
    }
    done += static_cast<size_t>(n);
  }
  return Status::ok();
}

}  // namespace

Status writeFileAtomic(const std::string& path, const std::string& content, mode_t mode) {
  const std::string tmp = path + ".tmp";
  {
    // Removed first so that the mode below applies even if a stale one exists.
    ::unlink(tmp.c_str());
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode));
    if (fd.valid() && ::fchmod(fd.get(), mode) != 0) return errnoStatus("chmod", tmp);
    if (!fd.valid()) return errnoStatus("create", tmp);
    TY_RETURN_IF_ERROR(writeAll(fd.get(), content, tmp));
    if (::fsync(fd.get()) != 0) return errnoStatus("fsync", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) return errnoStatus("rename", tmp);
  size_t slash = path.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dfd.valid()) return errnoStatus("open", dir);
  if (::fsync(dfd.get()) != 0) return errnoStatus("fsync", dir);
  return Status::ok();
}

Status writeExisting(const std::string& path, const std::string& content) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd.valid()) return errnoStatus("open", path);
  // Kernel knobs take the value in one write(); a short write is an error.
  ssize_t n;
  do {
    n = ::write(fd.get(), content.data(), content.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return errnoStatus("write " + content + " to", path);
  if (static_cast<size_t>(n) != content.size()) return Status::internal("short write to " + path);
  return Status::ok();
}

std::optional<std::uint64_t> processStartTime(pid_t pid) {
  auto text = readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text.isOk()) return std::nullopt;
  // The command name (field 2) may hold spaces and parentheses: fields
  // are counted after the last ')'.
  size_t close = text->rfind(')');
  if (close == std::string::npos) return std::nullopt;
  size_t pos = close + 1;
  int field = 2;
  while (pos < text->size()) {
    while (pos < text->size() && (*text)[pos] == ' ') ++pos;
    size_t end = text->find(' ', pos);
    if (end == std::string::npos) end = text->size();
    ++field;
    if (field == 22) {
      std::uint64_t v = 0;
      for (size_t i = pos; i < end; ++i) {
        char c = (*text)[i];
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + static_cast<std::uint64_t>(c - '0');
      }
      return v;
    }
    pos = end;
  }
  return std::nullopt;
}

int pidfdOpen(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

std::string signalName(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  if (abbrev == nullptr) return "signal " + std::to_string(sig);
  return std::string("SIG") + abbrev;
}

Result<std::string> findExecutable(const std::string& name, const std::string& path_env) {
  if (name.empty()) return Status::notFound("empty program name");
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) == 0) return name;
    return Status::notFound(name + " is not an executable file");
  }
  size_t start = 0;
  while (start <= path_env.size()) {
    size_t end = path_env.find(':', start);
    if (end == std::string::npos) end = path_env.size();
    std::string dir = path_env.substr(start, end - start);
    if (dir.empty()) dir = ".";
    std::string candidate = dir + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return Status::notFound(name + " not found on PATH");
}

std::int64_t monotonicMs() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

Result<int> runCommand(const std::vector<std::string>& argv, int timeout_ms) {
  if (argv.empty()) return Status::invalidArgument("empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  if (::posix_spawn_file_actions_init(&actions) != 0) return Status::internal("spawn init");
  for (int fd = 0; fd <= 2; ++fd) {
    ::posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == 0 ? O_RDONLY : O_WRONLY, 0);
  }
  // Nothing else of the server (sockets, run locks) leaks into the command.
  ::posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  posix_spawnattr_t attr;
  ::posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  ::posix_spawnattr_setsigmask(&attr, &none);
  sigset_t all;
  sigfillset(&all);
  ::posix_spawnattr_setsigdefault(&attr, &all);
  ::posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::posix_spawnattr_destroy(&attr);
  if (rc != 0) return Status::internal("run " + argv[0] + ": " + std::strerror(rc));
  UniqueFd pidfd(pidfdOpen(pid));
  std::int64_t deadline = monotonicMs() + timeout_ms;
  bool killed = false;
  for (;;) {
    int status = 0;
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) {
      if (WIFEXITED(status)) return WEXITSTATUS(status);
      return 128 + WTERMSIG(status);
    }
    if (w < 0 && errno != EINTR) return errnoStatus("wait for " + argv[0]);
    std::int64_t left = deadline - monotonicMs();
    if (left <= 0 && !killed) {
      ::kill(pid, SIGKILL);
      killed = true;
      left = 1000;
    }
    if (pidfd.valid()) {
      pollfd p{pidfd.get(), POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(left > 0 ? left : 10));
    } else {
      ::usleep(10'000);
    }
  }
}

}  // namespace ty::sys
