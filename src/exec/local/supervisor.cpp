// The supervisor: `trainyard __supervise --run-dir D ... -- argv...`.
//
// Started by the local executor in a new session (so its pid is the
// process group id of the replica) with the run directory's lock on fd
// --lock-fd. It records its pid, joins the replica's cgroups, runs the user
// process with stdout+stderr into a pipe it copies to output.log (rotated
// at --log-max-bytes, at most --log-max-files files), survives SIGTERM,
// SIGINT and SIGHUP sent to the group (the user process decides what they
// mean), waits for the user process, records how it ended in `exit`
// (atomically), and then SIGKILLs the whole group, itself included, so no
// descendant that stayed in the group outlives the replica.
//
// Each output line that is a training metric (codec/training_metric_codec.h)
// is also appended, whole and as written, to metrics.jsonl, which the server
// ingests by byte offset; other lines starting with the prefix are counted
// and stay in the log only.
#include "exec/local/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codec/training_metric_codec.h"
#include "exec/local/cgroup.h"
#include "exec/local/launch_plan.h"
#include "exec/local/sys_util.h"
#include "exec/run_layout.h"

namespace ty {

namespace {

constexpr int kDrainIdleMs = 200;    // after the user process ended: quiet pipe
constexpr int kDrainTotalMs = 2000;  // ... or at most this long

extern "C" void onTerminationSignal(int) {}

// output.log with size-capped rotation. Write errors (disk full) drop the
// data; the replica keeps running.
class LogWriter {
 public:
  LogWriter(std::string dir, std::int64_t max_bytes, int max_files)
      : dir_(std::move(dir)), max_bytes_(max_bytes), max_files_(max_files) {}

  Status open() {
    const std::string path = RunLayout::logPath(dir_, 0);
    fd_.reset(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
    if (!fd_.valid()) return sys::errnoStatus("open", path);
    struct stat st {};
    if (::fstat(fd_.get(), &st) != 0) return sys::errnoStatus("stat", path);
    size_ = st.st_size;
    return Status::ok();
  }

  void write(const char* data, size_t n) {
    if (!fd_.valid() && !open().isOk()) return;  // e.g. after a failed rotation
    while (n > 0) {
      if (size_ >= max_bytes_) {
        rotate();
        if (!fd_.valid()) return;
      }
      size_t chunk = static_cast<size_t>(
          std::min<std::int64_t>(static_cast<std::int64_t>(n), max_bytes_ - size_));
      size_t done = 0;
      while (done < chunk) {
        ssize_t w = ::write(fd_.get(), data + done, chunk - done);
        if (w < 0) {
          if (errno == EINTR) continue;
          return;  // drop the rest
        }
        done += static_cast<size_t>(w);
      }
      size_ += static_cast<std::int64_t>(chunk);
      data += chunk;
      n -= chunk;
    }
  }

  void note(const std::string& line) {
    std::string text = "trainyard: " + line + "\n";
    write(text.data(), text.size());
  }

  void close() { fd_.reset(); }

 private:
  // output.log -> .1 -> .2 ...; the oldest beyond max_files goes.
  void rotate() {
    fd_.reset();
    if (max_files_ <= 1) {
      ::unlink(RunLayout::logPath(dir_, 0).c_str());
    } else {
      ::unlink(RunLayout::logPath(dir_, max_files_ - 1).c_str());
      for (int i = max_files_ - 2; i >= 0; --i) {
        ::rename(RunLayout::logPath(dir_, i).c_str(), RunLayout::logPath(dir_, i + 1).c_str());
      }
    }
    size_ = 0;
    (void)open();
  }

  std::string dir_;
  std::int64_t max_bytes_;
  int max_files_;
  sys::UniqueFd fd_;
  std::int64_t size_ = 0;
};

// Finds the metric lines in the output stream and appends them to
// metrics.jsonl. Lines are cut from the bytes as they arrive; a line longer
// than any metric may be is skipped to its end without being kept. Write
// errors drop the line (the log still has it).
class MetricTap {
 public:
  explicit MetricTap(std::string path) : path_(std::move(path)) {}

  void feed(const char* data, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      char c = data[i];
      if (c == '\n') {
        if (!overflow_) line(line_);
        line_.clear();
        overflow_ = false;
        continue;
      }
      if (overflow_) continue;
      line_.push_back(c);
      // Decided early: most output is not a metric and need not be kept.
      if (line_.size() == kTrainingMetricPrefix.size() && !hasTrainingMetricPrefix(line_)) {
        overflow_ = true;
        line_.clear();
      } else if (line_.size() > kMaxTrainingMetricLine) {
        overflow_ = true;
        ++rejected_;
        line_.clear();
      }
    }
  }

  // The last line, when the output ended without a newline.
  void finish() {
    if (!overflow_ && !line_.empty()) line(line_);
    line_.clear();
  }

  std::int64_t rejected() const { return rejected_; }

 private:
  void line(const std::string& text) {
    if (!hasTrainingMetricPrefix(text)) return;
    if (!parseTrainingMetricLine(text).isOk()) {
      ++rejected_;
      return;
    }
    if (!fd_.valid()) {
      fd_.reset(::open(path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644));
      if (!fd_.valid()) return;
    }
    std::string out = text;
    if (!out.empty() && out.back() == '\r') out.pop_back();
    out.push_back('\n');
    // One write() of a whole line: the reader never sees half of one it
    // takes for complete, since it stops at the last newline.
    size_t done = 0;
    while (done < out.size()) {
      ssize_t w = ::write(fd_.get(), out.data() + done, out.size() - done);
      if (w < 0) {
        if (errno == EINTR) continue;
        return;
      }
      done += static_cast<size_t>(w);
    }
  }

  std::string path_;
  sys::UniqueFd fd_;
  std::string line_;
  bool overflow_ = false;  // skipping the rest of the current line
  std::int64_t rejected_ = 0;
};

void installHandlers() {
  struct sigaction sa {};
  sa.sa_handler = onTerminationSignal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  struct sigaction ign {};
  ign.sa_handler = SIG_IGN;
  sigemptyset(&ign.sa_mask);
  ::sigaction(SIGPIPE, &ign, nullptr);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
}

// In the forked child: becomes the user process or exits 126/127 with a
// line in the log saying why.
[[noreturn]] void execUser(const SupervisorArgs& args, int out_fd) {
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (null_fd < 0 || ::dup2(null_fd, 0) < 0 || ::dup2(out_fd, 1) < 0 || ::dup2(out_fd, 2) < 0) {
    _exit(127);
  }
  if (!args.workdir.empty() && ::chdir(args.workdir.c_str()) != 0) {
    std::fprintf(stderr, "trainyard: cannot change to workdir %s: %s\n", args.workdir.c_str(),
                 std::strerror(errno));
    _exit(127);
  }
  std::vector<char*> argv;
  for (const auto& a : args.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  int err = errno;
  std::fprintf(stderr, "trainyard: cannot run %s: %s\n", argv[0], std::strerror(err));
  _exit(err == ENOENT ? 127 : 126);
}

// Copies what is readable now; false at end of file.
bool pump(int fd, LogWriter& log, MetricTap& metrics) {
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      log.write(buf, static_cast<size_t>(n));
      metrics.feed(buf, static_cast<size_t>(n));
      if (static_cast<size_t>(n) < sizeof buf) return true;
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    return errno == EAGAIN;
  }
}

}  // namespace

int runSupervisor(int argc, char** argv) {
  std::vector<std::string> args_text(argv, argv + argc);
  auto parsed = parseSupervisorArgs(args_text);
  if (!parsed.isOk()) {
    std::fprintf(stderr, "trainyard __supervise: %s\n", parsed.status().message().c_str());
    return 2;
  }
  const SupervisorArgs& args = *parsed;
  // Only the run directory's lock is ours to keep; nothing else leaks in.
  if (args.lock_fd > 3) ::close_range(3, static_cast<unsigned>(args.lock_fd - 1), 0);
  ::close_range(static_cast<unsigned>(args.lock_fd + 1), ~0u, 0);
  if (::fcntl(args.lock_fd, F_SETFD, FD_CLOEXEC) != 0 ||
      ::flock(args.lock_fd, LOCK_EX | LOCK_NB) != 0) {
    std::fprintf(stderr, "trainyard __supervise: fd %d is not the run lock: %s\n", args.lock_fd,
                 std::strerror(errno));
    return 2;
  }
  if (::getpgrp() != ::getpid() && ::setsid() < 0) {
    std::fprintf(stderr, "trainyard __supervise: setsid: %s\n", std::strerror(errno));
    return 2;
  }
  installHandlers();

  const pid_t self = ::getpid();
  auto start = sys::processStartTime(self);
  Status pid_written =
      sys::writeFileAtomic(args.run_dir + "/" + RunLayout::kPidFile,
                           std::to_string(self) + " " + std::to_string(start.value_or(0)) + "\n");
  if (!pid_written.isOk()) {
    std::fprintf(stderr, "trainyard __supervise: %s\n", pid_written.toString().c_str());
    return 1;
  }
  LogWriter log(args.run_dir, args.log_max_bytes, args.log_max_files);
  Status opened = log.open();
  if (!opened.isOk()) {
    std::fprintf(stderr, "trainyard __supervise: %s\n", opened.toString().c_str());
    return 1;
  }
  MetricTap metrics(args.run_dir + "/" + RunLayout::kMetricsFile);
  Status joined = CgroupManager::join(args.cgroups, self);
  if (!joined.isOk()) log.note("running outside the replica's cgroups: " + joined.message());

  int exit_code = 127;
  int exit_signal = 0;
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
    log.note(std::string("cannot create the output pipe: ") + std::strerror(errno));
  } else {
    // Signals sent to the group while the child is between fork and exec
    // stay pending until it has default handlers again.
    sigset_t term_signals, old_mask;
    sigemptyset(&term_signals);
    for (int sig : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&term_signals, sig);
    ::sigprocmask(SIG_BLOCK, &term_signals, &old_mask);
    pid_t child = ::fork();
    if (child == 0) execUser(args, pipe_fds[1]);
    ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    ::close(pipe_fds[1]);
    sys::UniqueFd out(pipe_fds[0]);
    if (child < 0) {
      log.note(std::string("cannot fork: ") + std::strerror(errno));
    } else {
      (void)::fcntl(out.get(), F_SETFL, O_NONBLOCK);
      sys::UniqueFd pidfd(sys::pidfdOpen(child));
      bool pipe_open = true;
      int status = 0;
      bool reaped = false;
      while (!reaped) {
        pollfd fds[2] = {{out.get(), POLLIN, 0}, {pidfd.get(), POLLIN, 0}};
        int nfds = pipe_open ? 2 : 1;
        pollfd* first = pipe_open ? fds : fds + 1;
        // Without a pidfd (old kernel) poll the child every 100 ms.
        int timeout = pidfd.valid() ? -1 : 100;
        int rc = ::poll(first, static_cast<nfds_t>(nfds), timeout);
        if (rc < 0 && errno != EINTR) break;
        if (pipe_open && fds[0].revents != 0) pipe_open = pump(out.get(), log, metrics);
        pid_t w = ::waitpid(child, &status, WNOHANG);
        if (w == child) reaped = true;
        if (w < 0 && errno != EINTR) break;
      }
      // Descendants may still hold the pipe: drain what they wrote, briefly.
      std::int64_t deadline = sys::monotonicMs() + kDrainTotalMs;
      while (pipe_open) {
        std::int64_t left = deadline - sys::monotonicMs();
        if (left <= 0) break;
        pollfd p{out.get(), POLLIN, 0};
        int rc = ::poll(&p, 1, static_cast<int>(std::min<std::int64_t>(left, kDrainIdleMs)));
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) break;
        pipe_open = pump(out.get(), log, metrics);
      }
      if (reaped && WIFEXITED(status)) {
        exit_code = WEXITSTATUS(status);
      } else if (reaped && WIFSIGNALED(status)) {
        exit_signal = WTERMSIG(status);
        exit_code = 128 + exit_signal;
      } else {
        log.note(std::string("lost track of the user process: ") + std::strerror(errno));
      }
    }
  }
  metrics.finish();
  if (metrics.rejected() > 0) {
    log.note(std::to_string(metrics.rejected()) +
             " TRAINYARD_METRIC lines were not metrics (bad JSON, names or values) and were "
             "not recorded; see docs/observability.md");
  }
  log.close();
  Status recorded =
      sys::writeFileAtomic(args.run_dir + "/" + RunLayout::kExitFile,
                           std::to_string(exit_code) + " " + std::to_string(exit_signal) + "\n");
  if (!recorded.isOk()) {
    std::fprintf(stderr, "trainyard __supervise: %s\n", recorded.toString().c_str());
  }
  // The replica is over: nothing it started may stay in its group.
  if (::getpgrp() == self) ::kill(-self, SIGKILL);
  return exit_code;
}

}  // namespace ty
