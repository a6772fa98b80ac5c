#include "harness.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

extern char** environ;

namespace ty::e2e {
namespace {

std::int64_t nowMs() {
  return std::chrono::duration_cast<Millis>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// argv/envp arrays that live until exec (built before fork: the child only
// calls async-signal-safe functions).
struct ExecArgs {
  std::vector<std::string> argv_store;
  std::vector<std::string> env_store;
  std::vector<char*> argv;
  std::vector<char*> envp;

  ExecArgs(const std::vector<std::string>& args, const std::map<std::string, std::string>& env)
      : argv_store(args) {
    std::map<std::string, std::string> merged;
    for (char** e = environ; e && *e; ++e) {
      std::string kv(*e);
      auto eq = kv.find('=');
      if (eq != std::string::npos) merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    for (const auto& [k, v] : env) merged[k] = v;
    for (const auto& [k, v] : merged) env_store.push_back(k + "=" + v);
    for (auto& a : argv_store) argv.push_back(a.data());
    argv.push_back(nullptr);
    for (auto& e : env_store) envp.push_back(e.data());
    envp.push_back(nullptr);
  }
};

int decodeWait(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Waits for `pid` to end, up to `deadline`; returns its exit code or
// nullopt.
std::optional<int> waitPid(pid_t pid, Millis deadline) {
  std::int64_t end = nowMs() + deadline.count();
  while (true) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return decodeWait(status);
    if (r < 0 && errno != EINTR) return -1;
    if (nowMs() >= end) return std::nullopt;
    std::this_thread::sleep_for(10ms);
  }
}

std::string readProcFile(pid_t pid, const char* name) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/" + name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string trainyardBin() {
  const char* bin = std::getenv("TRAINYARD_BIN");
  return bin ? bin : "";
}

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ty-e2e-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << tmpl << ": " << std::strerror(errno);
    return;
  }
  path_ = std::filesystem::canonical(buf.data()).string();
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

bool waitFor(const std::function<bool()>& pred, Millis deadline, Millis every) {
  std::int64_t end = nowMs() + deadline.count();
  while (true) {
    if (pred()) return true;
    if (nowMs() >= end) return pred();
    std::this_thread::sleep_for(every);
  }
}

ProcResult runProcess(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env, Millis timeout) {
  ProcResult result;
  ExecArgs args(argv, env);
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return result;
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return result;
  }
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execve(args.argv[0], args.argv.data(), args.envp.data());
    _exit(127);
  }
  ::close(devnull);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return result;
  }
  std::int64_t end = nowMs() + timeout.count();
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  std::string* sinks[2] = {&result.out, &result.err};
  int open_fds = 2;
  char buf[8192];
  while (open_fds > 0) {
    std::int64_t left = end - nowMs();
    if (left <= 0) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    int n = ::poll(fds, 2, static_cast<int>(std::min<std::int64_t>(left, 1000)));
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      if (r > 0) {
        sinks[i]->append(buf, static_cast<size_t>(r));
      } else if (r == 0 || errno != EINTR) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  for (auto& f : fds) {
    if (f.fd >= 0) ::close(f.fd);
  }
  auto code = waitPid(pid, result.timed_out ? 5s : timeout);
  if (!code) {
    ::kill(pid, SIGKILL);
    code = waitPid(pid, 5s);
    result.timed_out = true;
  }
  result.exit_code = code.value_or(-1);
  return result;
}

ProcResult runCli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env, Millis timeout) {
  std::vector<std::string> argv = {trainyardBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, env, timeout);
}

// ---- Api ----

namespace {

HttpResult toResult(const httplib::Result& res) {
  HttpResult out;
  if (!res) {
    out.error = httplib::to_string(res.error());
    return out;
  }
  out.status = res->status;
  out.body = res->body;
  out.json = Json::parse(res->body, nullptr, false);
  return out;
}

std::unique_ptr<httplib::Client> client(const std::string& url) {
  auto c = std::make_unique<httplib::Client>(url);
  c->set_tcp_nodelay(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(30, 0);
  c->set_write_timeout(30, 0);
  return c;
}

}  // namespace

HttpResult Api::get(const std::string& path, const httplib::Headers& headers) const {
  return toResult(client(url_)->Get(path, headers));
}

HttpResult Api::post(const std::string& path, const std::string& body,
                     const std::string& content_type, const httplib::Headers& headers) const {
  return toResult(client(url_)->Post(path, headers, body, content_type));
}

HttpResult Api::request(const std::string& method, const std::string& path) const {
  auto c = client(url_);
  if (method == "GET") return toResult(c->Get(path));
  if (method == "POST") return toResult(c->Post(path, "{}", "application/json"));
  if (method == "PUT") return toResult(c->Put(path, "{}", "application/json"));
  if (method == "PATCH") return toResult(c->Patch(path, "{}", "application/json"));
  if (method == "DELETE") return toResult(c->Delete(path));
  if (method == "HEAD") return toResult(c->Head(path));
  if (method == "OPTIONS") return toResult(c->Options(path));
  HttpResult bad;
  bad.error = "unsupported method " + method;
  return bad;
}

std::int64_t Api::submit(const Json& spec, const httplib::Headers& headers) const {
  HttpResult r = post("/api/v1/jobs", spec.dump(), "application/json", headers);
  if (r.status != 201 || !r.json.is_object() || !r.json.contains("id")) {
    ADD_FAILURE() << "submit " << spec.dump() << " -> HTTP " << r.status << " " << r.body
                  << r.error;
    return 0;
  }
  return r.json["id"].get<std::int64_t>();
}

Json Api::job(std::int64_t id) const {
  HttpResult r = get("/api/v1/jobs/" + std::to_string(id));
  if (r.status != 200 || !r.json.is_object()) return Json();
  return r.json;
}

std::string Api::state(std::int64_t id) const {
  Json j = job(id);
  if (!j.is_object() || !j.contains("state") || !j["state"].is_string()) return "";
  return j["state"].get<std::string>();
}

bool isTerminalState(const std::string& state) {
  return state == "succeeded" || state == "failed" || state == "cancelled";
}

Json Api::waitDone(std::int64_t id, Millis deadline) const {
  Json last;
  bool done = waitFor(
      [&] {
        last = job(id);
        return last.is_object() && isTerminalState(last.value("state", ""));
      },
      deadline, 50ms);
  if (!done) {
    ADD_FAILURE() << "job " << id << " did not finish within " << deadline.count()
                  << " ms; last seen: " << last.dump() << "\nevents:\n"
                  << joinLines(eventLines(id));
    return Json();
  }
  return last;
}

bool Api::waitState(std::int64_t id, const std::string& want, Millis deadline) const {
  std::string seen;
  bool ok = waitFor(
      [&] {
        seen = state(id);
        return seen == want;
      },
      deadline, 25ms);
  if (!ok) {
    ADD_FAILURE() << "job " << id << " did not reach state " << want << " within "
                  << deadline.count() << " ms (last: " << seen << ")\nevents:\n"
                  << joinLines(eventLines(id));
  }
  return ok;
}

Json Api::events(std::int64_t id) const {
  HttpResult r = get("/api/v1/jobs/" + std::to_string(id) + "/events");
  if (r.status != 200 || !r.json.is_object()) return Json::array();
  return r.json["events"];
}

Json Api::attempts(std::int64_t id) const {
  HttpResult r = get("/api/v1/jobs/" + std::to_string(id) + "/attempts");
  if (r.status != 200 || !r.json.is_object()) return Json::array();
  return r.json["attempts"];
}

std::vector<std::string> Api::eventLines(std::int64_t id) const {
  std::vector<std::string> out;
  for (const auto& e : events(id)) {
    out.push_back(e.value("reason", "") + ": " + e.value("message", ""));
  }
  return out;
}

std::string Api::logs(std::int64_t id, int replica) const {
  HttpResult r =
      get("/api/v1/jobs/" + std::to_string(id) + "/logs?replica=" + std::to_string(replica));
  return r.status == 200 ? r.body : "";
}

bool anyContains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines) {
    if (l.find(needle) != std::string::npos) return true;
  }
  return false;
}

std::string joinLines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += "  " + l + "\n";
  return out;
}

std::vector<std::string> splitLines(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  for (std::string line; std::getline(ss, line);) out.push_back(line);
  return out;
}

// ---- ServerProcess ----

ServerProcess::ServerProcess(std::string data_dir, std::string log_path,
                             std::vector<std::string> args)
    : data_dir_(std::move(data_dir)), log_path_(std::move(log_path)), args_(std::move(args)) {}

ServerProcess::~ServerProcess() {
  if (running()) kill();
}

::testing::AssertionResult ServerProcess::start(Millis deadline) {
  if (running()) return ::testing::AssertionFailure() << "server already running";
  std::string bin = trainyardBin();
  if (bin.empty()) {
    return ::testing::AssertionFailure()
           << "TRAINYARD_BIN is not set: ctest sets it; for a direct run use "
              "TRAINYARD_BIN=build/trainyard";
  }
  std::error_code ec;
  std::filesystem::create_directories(data_dir_, ec);
  const std::string url_file = data_dir_ + "/server.url";
  std::filesystem::remove(url_file, ec);
  url_.clear();

  std::vector<std::string> argv = {bin,           "server",     "--listen",
                                   "127.0.0.1:0", "--data-dir", data_dir_};
  argv.insert(argv.end(), args_.begin(), args_.end());
  ExecArgs exec(argv, {});
  int log_fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (log_fd < 0 || devnull < 0) {
    return ::testing::AssertionFailure() << "open " << log_path_ << ": " << std::strerror(errno);
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    ::execve(exec.argv[0], exec.argv.data(), exec.envp.data());
    _exit(127);
  }
  ::close(log_fd);
  ::close(devnull);
  if (pid < 0) return ::testing::AssertionFailure() << "fork: " << std::strerror(errno);
  pid_ = pid;

  std::string why = "server.url not written";
  bool ok = waitFor(
      [&] {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          why = "server exited with code " + std::to_string(decodeWait(status));
          pid_ = -1;
          return true;
        }
        if (url_.empty()) {
          std::string text = readFile(url_file);
          if (text.empty() || text.back() != '\n') return false;
          url_ = text.substr(0, text.size() - 1);
          why = "/readyz did not answer 200";
        }
        HttpResult r = Api(url_).get("/readyz");
        if (r.status == 200) {
          why.clear();
          return true;
        }
        why = "/readyz: HTTP " + std::to_string(r.status) + " " + r.body + r.error;
        return false;
      },
      deadline, 20ms);
  if (ok && why.empty()) return ::testing::AssertionSuccess();
  if (running()) kill();
  return ::testing::AssertionFailure() << "server did not become ready within " << deadline.count()
                                       << " ms: " << why << "\nserver log:\n"
                                       << log();
}

void ServerProcess::kill() {
  if (!running()) return;
  ::kill(pid_, SIGKILL);
  (void)waitPid(pid_, 10s);
  pid_ = -1;
}

int ServerProcess::stop(Millis deadline) {
  if (!running()) return -1;
  ::kill(pid_, SIGTERM);
  auto code = waitPid(pid_, deadline);
  if (!code) {
    ::kill(pid_, SIGKILL);
    (void)waitPid(pid_, 10s);
    pid_ = -1;
    return -1;
  }
  pid_ = -1;
  return *code;
}

::testing::AssertionResult ServerProcess::restart(Millis deadline) {
  if (running()) stop();
  return start(deadline);
}

std::string ServerProcess::log() const { return readFile(log_path_); }

// ---- E2eTest ----

void E2eTest::SetUp() {
  ASSERT_FALSE(trainyardBin().empty())
      << "TRAINYARD_BIN is not set: ctest sets it; for a direct run use "
         "TRAINYARD_BIN=build/trainyard";
  ASSERT_FALSE(tmp_.path().empty());
  data_dir_ = tmp_.sub("data");
  server_ = std::make_unique<ServerProcess>(data_dir_, tmp_.sub("server.log"), serverArgs());
  ASSERT_TRUE(server_->start());
}

void E2eTest::TearDown() {
  if (HasFailure() && server_) {
    std::string log = server_->log();
    if (log.size() > 20000) log = "...\n" + log.substr(log.size() - 20000);
    std::cerr << "---- server log (" << tmp_.sub("server.log") << ") ----\n" << log << "----\n";
  }
  if (server_) server_->kill();
  // Best effort: nothing a failed test started outlives it.
  for (pid_t p : processesMentioning(tmp_.path())) ::kill(p, SIGKILL);
}

Json E2eTest::scriptJob(const std::string& script, int gpus) const {
  Json spec = {{"script", script}, {"grace_period", "1s"}, {"env", {{kMarkerEnv, markerValue()}}}};
  if (gpus > 0) spec["resources"] = {{"gpus", gpus}};
  return spec;
}

void E2eTest::expectNoLeftoverProcesses(Millis deadline) {
  std::vector<pid_t> left;
  bool clean = waitFor(
      [&] {
        left = processesMentioning(tmp_.path());
        // The server itself runs over the data dir.
        std::erase(left, server_ && server_->running() ? server_->pid() : -1);
        return left.empty();
      },
      deadline, 50ms);
  EXPECT_TRUE(clean) << "processes left behind:\n" << describeProcesses(left);
}

// ---- /proc ----

bool processAlive(pid_t pid) {
  if (pid <= 0) return false;
  std::string stat = readProcFile(pid, "stat");
  if (stat.empty()) return false;
  // "pid (comm) S ...": the state follows the last ')'.
  auto close = stat.rfind(')');
  if (close == std::string::npos || close + 2 >= stat.size()) return false;
  char state = stat[close + 2];
  return state != 'Z' && state != 'X' && state != 'x';
}

std::vector<pid_t> processesMentioning(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) return out;
  pid_t self = ::getpid();
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == self) continue;
    if (!processAlive(static_cast<pid_t>(pid))) continue;
    std::string cmdline = readProcFile(static_cast<pid_t>(pid), "cmdline");
    std::string environ_text = readProcFile(static_cast<pid_t>(pid), "environ");
    if (cmdline.find(needle) != std::string::npos ||
        environ_text.find(needle) != std::string::npos) {
      out.push_back(static_cast<pid_t>(pid));
    }
  }
  ::closedir(d);
  return out;
}

std::string describeProcesses(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t p : pids) {
    std::string cmd = readProcFile(p, "cmdline");
    for (char& c : cmd) {
      if (c == '\0') c = ' ';
    }
    out += "  " + std::to_string(p) + ": " + cmd + "\n";
  }
  return out;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool fileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

void writeFile(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace ty::e2e
