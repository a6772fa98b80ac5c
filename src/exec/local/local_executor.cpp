#include "exec/local/local_executor.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>

#include "common/units.h"
#include "exec/local/cgroup.h"
#include "exec/local/launch_plan.h"
#include "exec/local/sys_util.h"
#include "exec/run_layout.h"

namespace ty {

namespace {

using sys::UniqueFd;

constexpr int kLockFdInSupervisor = 3;
// Where a container sees its job's directory (for the checkpoint mark).
constexpr const char* kJobDirInContainer = "/run/trainyard";
constexpr int kFirstHighFd = 10;  // fds handed to the child stay clear of 0..3
constexpr int kPodmanTimeoutMs = 15'000;
constexpr int kNoPidfdPollMs = 500;

std::string limitsText(const Resources& r) {
  std::vector<std::string> parts;
  if (!r.cpus.isZero()) parts.push_back(r.cpus.toString() + "-CPU");
  if (r.memory_bytes > 0) parts.push_back(formatMemory(r.memory_bytes));
  std::string out = "the ";
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? " / " : "") + parts[i];
  return out + (parts.size() > 1 ? " limits" : " limit");
}

ReplicaExit exitFromCode(const AttemptKey& key, int replica, int code, int sig) {
  ReplicaExit e;
  e.key = key;
  e.replica = replica;
  e.exit_code = code;
  e.signal = sig;
  e.message =
      sig != 0 ? "killed by " + sys::signalName(sig) : "exited with code " + std::to_string(code);
  return e;
}

ReplicaExit lostExit(const AttemptKey& key, int replica, const std::string& why) {
  ReplicaExit e;
  e.key = key;
  e.replica = replica;
  e.exit_code = -1;
  e.lost = true;
  e.message = "lost: " + why;
  return e;
}

// The `exit` file of a run directory. NotFound when absent; Internal when
// unreadable or malformed.
Result<ReplicaExit> readExitFile(const std::string& dir, const AttemptKey& key, int replica) {
  TY_ASSIGN_OR_RETURN(std::string text, sys::readFile(dir + "/" + RunLayout::kExitFile));
  std::istringstream in(text);
  int code = 0;
  int sig = 0;
  if (!(in >> code >> sig)) return Status::internal("malformed exit file in " + dir);
  return exitFromCode(key, replica, code, sig);
}

struct PidRecord {
  pid_t pid = 0;
  std::uint64_t start = 0;
};

// The supervisor recorded in `pid`, if that process still runs (same pid
// and start time).
std::optional<PidRecord> liveSupervisor(const std::string& dir) {
  auto text = sys::readFile(dir + "/" + RunLayout::kPidFile);
  if (!text.isOk()) return std::nullopt;
  std::istringstream in(*text);
  long long pid = 0;
  unsigned long long start = 0;
  if (!(in >> pid >> start) || pid <= 1 || pid > INT_MAX) return std::nullopt;
  auto now = sys::processStartTime(static_cast<pid_t>(pid));
  if (!now || *now != start) return std::nullopt;
  return PidRecord{static_cast<pid_t>(pid), start};
}

// Parent pid from /proc/<pid>/stat (field 4); 0 when unknown.
pid_t parentOf(pid_t pid) {
  auto text = sys::readFile("/proc/" + std::to_string(pid) + "/stat");
  if (!text.isOk()) return 0;
  size_t close = text->rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream in(text->substr(close + 1));
  std::string state;
  long long ppid = 0;
  if (!(in >> state >> ppid)) return 0;
  return static_cast<pid_t>(ppid);
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) out.push_back(line);
  }
  return out;
}

// Reads exactly a small record from a pipe; 0 bytes means the other end
// closed.
ssize_t readFull(int fd, void* buf, size_t n) {
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd, static_cast<char*>(buf) + got, n - got);
    if (r < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

class LocalExecutor final : public Executor {
 public:
  LocalExecutor(LocalExecutorConfig config, CgroupManager cgroups, UniqueFd wake)
      : config_(std::move(config)),
        layout_(config_.data_dir),
        instance_(instanceTag(std::filesystem::absolute(config_.data_dir).lexically_normal())),
        cgroups_(std::move(cgroups)),
        inherited_env_(inheritedEnvironment()),
        wake_(std::move(wake)) {}

  ~LocalExecutor() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wakeMonitor();
    if (monitor_.joinable()) monitor_.join();
  }

  Status start() {
    try {
      monitor_ = std::thread([this] { monitorLoop(); });
    } catch (const std::exception& e) {
      return Status::internal(std::string("start the executor's monitor thread: ") + e.what());
    }
    return Status::ok();
  }

  void setObserver(Observer observer) override {
    std::lock_guard<std::mutex> lock(mu_);
    observer_ = std::move(observer);
  }

  Result<LaunchResult> launch(const LaunchRequest& request) override {
    TY_RETURN_IF_ERROR(validate(request));
    std::lock_guard<std::mutex> launch_lock(launch_mu_);
    const bool container = !request.spec.image.empty();
    std::string podman;
    if (container) {
      const char* path = std::getenv("PATH");
      auto found = sys::findExecutable(config_.container.podman, path ? path : "");
      if (!found.isOk()) {
        return Status::failedPrecondition(
            "image set but podman is not installed: install podman or remove `image`");
      }
      podman = *found;
    }
    LaunchResult result;
    std::vector<ReplicaExit> reports;
    bool cgroup_warned = false;
    Status status;
    for (int r = 0; r < static_cast<int>(request.replicas.size()); ++r) {
      status = launchReplica(request, r, podman, &result, &reports, &cgroup_warned);
      if (!status.isOk()) {
        status = status.withContext("replica " + std::to_string(r));
        break;
      }
    }
    if (!reports.empty()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.insert(pending_.end(), reports.begin(), reports.end());
      }
      wakeMonitor();
    }
    if (!status.isOk()) return status;
    return result;
  }

  Status signal(const AttemptKey& key, int sig) override {
    std::vector<std::string> containers;
    bool known = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [id, rep] : live_) {
        if (id.first != key) continue;
        known = true;
        if (::kill(-rep.pid, sig) != 0 && errno == ESRCH) ::kill(rep.pid, sig);
        if (sig == SIGKILL) rep.sigkill_sent = true;
        if (!rep.container_name.empty()) containers.push_back(rep.container_name);
      }
    }
    if (!known) {
      // Not watched by this instance (not adopted yet after a restart): the
      // run directories still say who runs. Launches wait meanwhile, so the
      // lock probes below never make one of them think a replica ended.
      std::lock_guard<std::mutex> launch_lock(launch_mu_);
      auto replicas = layout_.listReplicas(key);
      if (replicas.isOk()) {
        for (int r : *replicas) {
          const std::string dir = layout_.replicaDir(key, r);
          if (auto sup = runningSupervisor(dir)) ::kill(-sup->pid, sig);
          auto name = sys::readFile(dir + "/" + RunLayout::kContainerFile);
          if (name.isOk() && !sys::fileExists(dir + "/" + RunLayout::kExitFile)) {
            containers.push_back(*name);
          }
        }
      }
    }
    if (!containers.empty()) {
      const char* path = std::getenv("PATH");
      auto podman = sys::findExecutable(config_.container.podman, path ? path : "");
      if (podman.isOk()) {
        for (const auto& name : containers) {
          auto rc = sys::runCommand(podmanKillArgv(*podman, name, sig), kPodmanTimeoutMs);
          if (!rc.isOk()) spdlog::warn("podman kill {}: {}", name, rc.status().toString());
        }
      }
    }
    return Status::ok();
  }

  Timestamp lastCheckpoint(JobId job) const override {
    struct stat st {};
    if (::stat(layout_.checkpointMark(job).c_str(), &st) != 0) return 0;
    return static_cast<Timestamp>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1'000'000;
  }

  void release(const AttemptKey& key) override {
    auto replicas = layout_.listReplicas(key);
    if (!replicas.isOk()) {
      spdlog::warn("release {}: {}", key.toString(), replicas.status().toString());
      return;
    }
    const char* path = std::getenv("PATH");
    for (int r : *replicas) {
      const std::string dir = layout_.replicaDir(key, r);
      auto cgroups = sys::readFile(dir + "/" + RunLayout::kCgroupsFile);
      if (cgroups.isOk()) {
        Status s = CgroupManager::release(splitLines(*cgroups));
        if (!s.isOk()) spdlog::warn("release {}: {}", key.toString(), s.toString());
      }
      auto name = sys::readFile(dir + "/" + RunLayout::kContainerFile);
      if (name.isOk()) {
        auto podman = sys::findExecutable(config_.container.podman, path ? path : "");
        if (podman.isOk()) (void)sys::runCommand(podmanRmArgv(*podman, *name), kPodmanTimeoutMs);
      }
    }
  }

 private:
  // One supervisor being watched.
  struct Watched {
    pid_t pid = 0;
    std::uint64_t start = 0;
    UniqueFd pidfd;
    bool our_child = false;
    bool sigkill_sent = false;
    std::string dir;
    std::string container_name;
  };
  using ReplicaId = std::pair<AttemptKey, int>;

  Status validate(const LaunchRequest& r) const {
    if (r.replicas.empty()) return Status::invalidArgument("no replicas to launch", "replicas");
    if (r.key.number < 1 || r.key.job.value() < 0) {
      return Status::invalidArgument("bad attempt key " + r.key.toString());
    }
    if (r.spec.command.empty() == r.spec.script.empty()) {
      return Status::invalidArgument("exactly one of command and script must be set", "command");
    }
    if (!r.spec.image.empty() && r.spec.image[0] == '-') {
      return Status::invalidArgument("image must not start with '-'", "image");
    }
    for (const auto& [k, v] : r.spec.env) {
      if (k.empty() || k.find('=') != std::string::npos || k.find('\0') != std::string::npos) {
        return Status::invalidArgument("bad environment variable name '" + k + "'", "env");
      }
    }
    if (!config_.node_name.empty()) {
      for (const auto& p : r.replicas) {
        if (!p.node.empty() && p.node != config_.node_name) {
          return Status::invalidArgument("replica placed on node " + p.node + ", this is " +
                                         config_.node_name);
        }
      }
    }
    return Status::ok();
  }

  // Starts, adopts or reports replica `r`.
  Status launchReplica(const LaunchRequest& request, int r, const std::string& podman,
                       LaunchResult* result, std::vector<ReplicaExit>* reports,
                       bool* cgroup_warned) {
    const AttemptKey& key = request.key;
    const std::string dir = layout_.replicaDir(key, r);
    TY_RETURN_IF_ERROR(sys::makeDirs(dir));
    const std::string lock_path = dir + "/" + RunLayout::kLockFile;
    UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
    if (!lock.valid()) return sys::errnoStatus("open", lock_path);
    if (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
      if (errno != EWOULDBLOCK) return sys::errnoStatus("lock", lock_path);
      TY_ASSIGN_OR_RETURN(bool adopted, adopt(key, r, dir, lock.get(), result));
      if (adopted) return Status::ok();
      // The holder let go meanwhile: the lock is ours now.
    }
    if (reportEnded(key, r, dir, reports)) return Status::ok();

    // Fresh start.
    const bool container = !podman.empty();
    std::vector<std::string> cgroup_dirs;
    if (!container && config_.use_cgroups) {
      CgroupLimits limits{request.spec.resources.cpus.milli(), request.spec.resources.memory_bytes};
      auto made = cgroups_.create(containerName(instance_, key, r), limits);
      if (made.isOk()) {
        cgroup_dirs = *made;
        std::string text;
        for (const auto& d : cgroup_dirs) text += d + "\n";
        Status s = sys::writeFileAtomic(dir + "/" + RunLayout::kCgroupsFile, text);
        if (!s.isOk()) {
          (void)CgroupManager::release(cgroup_dirs);
          return s;
        }
      } else if (limits.any() && !*cgroup_warned) {
        *cgroup_warned = true;
        result->warnings.push_back("cgroups not writable here (" + made.status().message() +
                                   "): running without " + limitsText(request.spec.resources));
      }
    }
    std::vector<std::string> user_argv = userArgv(request.spec);
    EnvMap env = replicaEnvironment(request, r, inherited_env_, container);
    if (config_.extra_env) {
      for (auto& [k, v] : config_.extra_env(key)) env[k] = std::move(v);
    }
    // A container sees the job's directory at a fixed place.
    env["TRAINYARD_CHECKPOINT_MARK"] =
        container ? std::string(kJobDirInContainer) + "/" + RunLayout::kCheckpointMark
                  : layout_.checkpointMark(key.job);
    std::string container_name;
    if (container) {
      container_name = containerName(instance_, key, r);
      ContainerRun run;
      run.name = container_name;
      run.image = request.spec.image;
      run.command = request.spec.command;
      run.script = request.spec.script;
      run.cpus = request.spec.resources.cpus;
      run.memory_bytes = request.spec.resources.memory_bytes;
      run.workdir = request.spec.workdir;
      run.gpus = request.replicas[static_cast<size_t>(r)].gpus;
      run.mounts.push_back({layout_.jobDir(key.job), kJobDirInContainer});
      for (const auto& [k, v] : env) {
        if (!inherited_env_.count(k) || request.spec.env.count(k)) run.env[k] = v;
      }
      user_argv = podmanRunArgv(podman, config_.container, run,
                                [](const std::string& p) { return sys::fileExists(p); });
      // The podman client itself runs with this machine's environment.
      env = inherited_env_;
      TY_RETURN_IF_ERROR(
          sys::writeFileAtomic(dir + "/" + RunLayout::kContainerFile, container_name));
    }
    SupervisorArgs sargs;
    sargs.run_dir = dir;
    sargs.log_max_bytes = config_.log_max_bytes;
    sargs.log_max_files = config_.log_max_files;
    sargs.lock_fd = kLockFdInSupervisor;
    sargs.cgroups = cgroup_dirs;
    sargs.workdir = container ? std::string() : request.spec.workdir;
    sargs.argv = user_argv;

    auto undo_cgroups = [&] {
      if (!cgroup_dirs.empty()) {
        (void)CgroupManager::release(cgroup_dirs);
        ::unlink((dir + "/" + RunLayout::kCgroupsFile).c_str());
      }
    };
    const std::string launched = dir + "/" + RunLayout::kLaunchedFile;
    {
      UniqueFd marker(::open(launched.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
      if (!marker.valid()) {
        undo_cgroups();
        return sys::errnoStatus("create", launched);
      }
      UniqueFd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      if (!dfd.valid() || ::fsync(dfd.get()) != 0) {
        Status s = sys::errnoStatus("fsync", dir);
        ::unlink(launched.c_str());
        undo_cgroups();
        return s;
      }
    }
    auto pid = spawnSupervisor(supervisorArgv(config_.supervisor_command, sargs), env, lock.get());
    if (!pid.isOk()) {
      ::unlink(launched.c_str());
      undo_cgroups();
      return pid.status();
    }
    Watched w;
    w.pid = *pid;
    w.start = sys::processStartTime(*pid).value_or(0);
    w.pidfd = UniqueFd(sys::pidfdOpen(*pid));
    w.our_child = true;
    w.dir = dir;
    w.container_name = container_name;
    watch(key, r, std::move(w));
    result->started.push_back(ReplicaStarted{r, *pid, false});
    return Status::ok();
  }

  // With the run lock held by us: the replica ran before. Queues its
  // recorded exit or "lost" and returns true; false for a fresh directory.
  bool reportEnded(const AttemptKey& key, int r, const std::string& dir,
                   std::vector<ReplicaExit>* reports) {
    auto recorded = readExitFile(dir, key, r);
    if (recorded.isOk()) {
      reports->push_back(*recorded);
      return true;
    }
    if (recorded.status().code() != StatusCode::kNotFound) {
      reports->push_back(lostExit(key, r, recorded.status().message()));
      return true;
    }
    const std::string launched = dir + "/" + RunLayout::kLaunchedFile;
    if (sys::fileExists(launched)) {
      // The supervisor writes its pid file before it forks the user's
      // program: without one, nothing of the replica ever ran (the server
      // died between marking and starting it), so it starts afresh.
      if (!sys::fileExists(dir + "/" + RunLayout::kPidFile)) {
        ::unlink(launched.c_str());
        return false;
      }
      reports->push_back(
          lostExit(key, r, "it was started before but left no exit record (machine restart?)"));
      return true;
    }
    return false;
  }

  // The run lock is held by someone: a supervisor from earlier (or from
  // this instance). Watches it and returns true; returns false when the
  // holder let go meanwhile and `lock_fd` now holds the lock.
  Result<bool> adopt(const AttemptKey& key, int r, const std::string& dir, int lock_fd,
                     LaunchResult* result) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = live_.find({key, r});
      if (it != live_.end()) {
        result->started.push_back(ReplicaStarted{r, it->second.pid, true});
        return true;
      }
    }
    std::int64_t deadline = sys::monotonicMs() + config_.adopt_timeout_ms;
    for (;;) {
      if (auto sup = liveSupervisor(dir)) {
        Watched w;
        w.pid = sup->pid;
        w.start = sup->start;
        w.pidfd = UniqueFd(sys::pidfdOpen(sup->pid));
        // The pidfd must name the process the pid file names.
        if (sys::processStartTime(sup->pid) != sup->start) continue;
        w.our_child = parentOf(sup->pid) == ::getpid();
        w.dir = dir;
        auto name = sys::readFile(dir + "/" + RunLayout::kContainerFile);
        if (name.isOk()) w.container_name = *name;
        watch(key, r, std::move(w));
        result->started.push_back(ReplicaStarted{r, sup->pid, true});
        return true;
      }
      // The supervisor may have just ended and let go of the lock.
      if (::flock(lock_fd, LOCK_EX | LOCK_NB) == 0) return false;
      if (sys::monotonicMs() >= deadline) {
        return Status::unavailable("run directory " + dir +
                                   " is locked by a process that is not a known supervisor");
      }
      ::usleep(20'000);
    }
  }

  // The supervisor running in `dir`, waiting (up to adopt_timeout_ms) for a
  // just-started one to write its pid file; nullopt when none runs.
  std::optional<PidRecord> runningSupervisor(const std::string& dir) {
    UniqueFd lock(::open((dir + "/" + RunLayout::kLockFile).c_str(), O_RDWR | O_CLOEXEC));
    if (!lock.valid()) return std::nullopt;
    std::int64_t deadline = sys::monotonicMs() + config_.adopt_timeout_ms;
    for (;;) {
      if (auto sup = liveSupervisor(dir)) return sup;
      if (::flock(lock.get(), LOCK_EX | LOCK_NB) == 0) return std::nullopt;  // nothing runs
      if (sys::monotonicMs() >= deadline) return std::nullopt;
      ::usleep(10'000);
    }
  }

  // fork + exec of the supervisor in a new session with the run lock as fd
  // 3. Exec failures come back through a close-on-exec pipe.
  Result<pid_t> spawnSupervisor(const std::vector<std::string>& argv, const EnvMap& env,
                                int lock_fd) {
    if (argv.empty()) return Status::invalidArgument("empty supervisor command");
    // Everything the child touches is prepared before fork: after fork only
    // async-signal-safe calls are allowed in a threaded process.
    std::vector<char*> cargv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    std::vector<std::string> env_text;
    for (const auto& [k, v] : env) env_text.push_back(k + "=" + v);
    std::vector<char*> cenv;
    for (auto& e : env_text) cenv.push_back(e.data());
    cenv.push_back(nullptr);

    UniqueFd lock_high(::fcntl(lock_fd, F_DUPFD_CLOEXEC, kFirstHighFd));
    if (!lock_high.valid()) return sys::errnoStatus("dup run lock");
    int err_pipe[2];
    if (::pipe2(err_pipe, O_CLOEXEC) != 0) return sys::errnoStatus("pipe");
    UniqueFd err_read(err_pipe[0]);
    UniqueFd err_write(::fcntl(err_pipe[1], F_DUPFD_CLOEXEC, kFirstHighFd));
    ::close(err_pipe[1]);
    if (!err_write.valid()) return sys::errnoStatus("dup pipe");
    UniqueFd dev_null(::open("/dev/null", O_RDWR | O_CLOEXEC));
    if (!dev_null.valid()) return sys::errnoStatus("open", "/dev/null");
    UniqueFd null_high(::fcntl(dev_null.get(), F_DUPFD_CLOEXEC, kFirstHighFd));
    if (!null_high.valid()) return sys::errnoStatus("dup /dev/null");

    sigset_t all, old;
    sigfillset(&all);
    ::pthread_sigmask(SIG_SETMASK, &all, &old);
    // vfork: the server can be large and many-threaded, and copying its page
    // tables for every launch costs milliseconds. The child runs only
    // async-signal-safe calls on values prepared above, then execs.
    const int n = null_high.get();
    const int e = err_write.get();
    const int l = lock_high.get();
    pid_t pid = ::vfork();
    if (pid == 0) {
      for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP) ::signal(sig, SIG_DFL);
      }
      sigset_t none;
      sigemptyset(&none);
      if (::setsid() < 0 || ::dup2(n, 0) < 0 || ::dup2(n, 1) < 0 || ::dup2(n, 2) < 0 ||
          ::dup2(l, kLockFdInSupervisor) < 0 || ::sigprocmask(SIG_SETMASK, &none, nullptr) != 0) {
        int err = errno;
        (void)!::write(e, &err, sizeof err);
        _exit(127);
      }
      ::execve(cargv[0], cargv.data(), cenv.data());
      int err = errno;
      (void)!::write(e, &err, sizeof err);
      _exit(127);
    }
    int fork_errno = errno;
    ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
    if (pid < 0) {
      errno = fork_errno;
      return sys::errnoStatus("fork");
    }
    err_write.reset();
    int child_errno = 0;
    ssize_t got = readFull(err_read.get(), &child_errno, sizeof child_errno);
    if (got == static_cast<ssize_t>(sizeof child_errno)) {
      int status = 0;
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return Status::internal("start supervisor " + argv[0] + ": " + std::strerror(child_errno));
    }
    return pid;
  }

  void watch(const AttemptKey& key, int r, Watched w) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      live_[{key, r}] = std::move(w);
    }
    wakeMonitor();
  }

  void wakeMonitor() {
    std::uint64_t one = 1;
    ssize_t n;
    do {
      n = ::write(wake_.get(), &one, sizeof one);
    } while (n < 0 && errno == EINTR);
  }

  // How a watched supervisor that is gone ended. Called without mu_.
  ReplicaExit finish(const ReplicaId& id, Watched& w) {
    if (w.our_child) {
      int status = 0;
      while (::waitpid(w.pid, &status, WNOHANG) < 0 && errno == EINTR) {
      }
    }
    auto recorded = readExitFile(w.dir, id.first, id.second);
    if (recorded.isOk()) return *recorded;
    if (w.sigkill_sent) {
      // The group kill took the supervisor too; record it so a later
      // launch (after a restart) reports the same.
      Status s = sys::writeFileAtomic(
          w.dir + "/" + RunLayout::kExitFile,
          std::to_string(128 + SIGKILL) + " " + std::to_string(SIGKILL) + "\n");
      if (!s.isOk()) spdlog::warn("record exit of {}: {}", w.dir, s.toString());
      return exitFromCode(id.first, id.second, 128 + SIGKILL, SIGKILL);
    }
    if (recorded.status().code() != StatusCode::kNotFound) {
      return lostExit(id.first, id.second, recorded.status().message());
    }
    return lostExit(id.first, id.second, "its supervisor ended without recording an exit");
  }

  void monitorLoop() {
    for (;;) {
      std::vector<pollfd> fds;
      std::vector<ReplicaId> ids;
      bool any_without_pidfd = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        fds.push_back({wake_.get(), POLLIN, 0});
        for (const auto& [id, w] : live_) {
          if (w.pidfd.valid()) {
            fds.push_back({w.pidfd.get(), POLLIN, 0});
            ids.push_back(id);
          } else {
            any_without_pidfd = true;
          }
        }
      }
      deliverPending();
      int rc = ::poll(fds.data(), fds.size(), any_without_pidfd ? kNoPidfdPollMs : -1);
      if (rc < 0 && errno != EINTR) {
        spdlog::error("executor monitor: poll: {}", std::strerror(errno));
        ::usleep(100'000);
        continue;
      }
      if (fds[0].revents != 0) {
        std::uint64_t count = 0;
        (void)!::read(wake_.get(), &count, sizeof count);
      }
      std::vector<std::pair<ReplicaId, Watched>> ended;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (stop_) return;
        for (size_t i = 1; i < fds.size(); ++i) {
          if (fds[i].revents == 0) continue;
          auto it = live_.find(ids[i - 1]);
          if (it == live_.end()) continue;
          ended.emplace_back(it->first, std::move(it->second));
          live_.erase(it);
        }
        for (auto it = live_.begin(); it != live_.end();) {
          if (!it->second.pidfd.valid() &&
              sys::processStartTime(it->second.pid) != it->second.start) {
            ended.emplace_back(it->first, std::move(it->second));
            it = live_.erase(it);
          } else {
            ++it;
          }
        }
      }
      std::vector<ReplicaExit> exits;
      for (auto& [id, w] : ended) exits.push_back(finish(id, w));
      if (!exits.empty()) {
        std::lock_guard<std::mutex> lock(mu_);
        pending_.insert(pending_.end(), exits.begin(), exits.end());
      }
      deliverPending();
    }
  }

  void deliverPending() {
    std::deque<ReplicaExit> batch;
    Observer observer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!observer_) return;  // kept until an observer is set
      batch.swap(pending_);
      observer = observer_;
    }
    for (const auto& e : batch) {
      try {
        observer(e);
      } catch (const std::exception& ex) {
        spdlog::error("executor observer threw: {}", ex.what());
      } catch (...) {
        spdlog::error("executor observer threw");
      }
    }
  }

  const LocalExecutorConfig config_;
  const RunLayout layout_;
  const std::string instance_;  // tells this server's cgroups and containers apart
  const CgroupManager cgroups_;
  const EnvMap inherited_env_;
  UniqueFd wake_;
  std::mutex launch_mu_;  // one launch at a time: lock-file checks then fork

  std::mutex mu_;
  Observer observer_;
  std::map<ReplicaId, Watched> live_;
  std::deque<ReplicaExit> pending_;
  bool stop_ = false;
  std::thread monitor_;
};

}  // namespace

Result<std::unique_ptr<Executor>> newLocalExecutor(LocalExecutorConfig config) {
  if (config.data_dir.empty()) return Status::invalidArgument("data_dir is required");
  if (config.log_max_bytes < 1) return Status::invalidArgument("log_max_bytes must be >= 1");
  if (config.log_max_files < 1 || config.log_max_files > 1000) {
    return Status::invalidArgument("log_max_files must be 1..1000");
  }
  if (config.supervisor_command.empty()) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n < 0) return sys::errnoStatus("readlink", "/proc/self/exe");
    config.supervisor_command = {std::string(buf, static_cast<size_t>(n)), "__supervise"};
  }
  if (config.supervisor_command[0].empty() || config.supervisor_command[0][0] != '/') {
    return Status::invalidArgument("supervisor_command must start with an absolute path");
  }
  TY_RETURN_IF_ERROR(sys::makeDirs(config.data_dir + "/jobs"));
  UniqueFd wake(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake.valid()) return sys::errnoStatus("eventfd");
  CgroupManager cgroups = config.use_cgroups
                              ? CgroupManager::detect(config.cgroup_parent, config.cgroup_root)
                              : CgroupManager();
  auto exec =
      std::make_unique<LocalExecutor>(std::move(config), std::move(cgroups), std::move(wake));
  TY_RETURN_IF_ERROR(exec->start());
  return std::unique_ptr<Executor>(std::move(exec));
}

Result<int> pickFreeTcpPort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return sys::errnoStatus("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    return sys::errnoStatus("bind 127.0.0.1:0");
  }
  socklen_t len = sizeof addr;
  if (::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    return sys::errnoStatus("getsockname");
  }
  return static_cast<int>(ntohs(addr.sin_port));
}

}  // namespace ty
