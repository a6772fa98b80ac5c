#include "harness.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
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
                      const std::map<std::string, std::string>& env, Millis timeout,
                      const std::optional<std::string>& input) {
  ProcResult result;
  ExecArgs args(argv, env);
  int in_pipe[2] = {-1, -1};
  if (input && ::pipe2(in_pipe, O_CLOEXEC) != 0) return result;
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
    ::dup2(input ? in_pipe[0] : devnull, 0);
    ::dup2(out_pipe[1], 1);
    ::dup2(err_pipe[1], 2);
    ::execve(args.argv[0], args.argv.data(), args.envp.data());
    _exit(127);
  }
  ::close(devnull);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (input) {
    // A child that exits without reading its input must fail the write,
    // not kill the test with SIGPIPE.
    ::signal(SIGPIPE, SIG_IGN);
    ::close(in_pipe[0]);
    // Small inputs fit in the pipe: written whole, then the end of input.
    size_t done = 0;
    while (pid > 0 && done < input->size()) {
      ssize_t n = ::write(in_pipe[1], input->data() + done, input->size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the child is gone or stopped reading
      done += static_cast<size_t>(n);
    }
    ::close(in_pipe[1]);
  }
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
                  const std::map<std::string, std::string>& env, Millis timeout,
                  const std::optional<std::string>& input) {
  std::vector<std::string> argv = {trainyardBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return runProcess(argv, env, timeout, input);
}

// ---- Api ----

std::string HttpResult::header(const std::string& name) const {
  auto it = headers.find(name);  // httplib::Headers compares names case-insensitively
  return it == headers.end() ? "" : it->second;
}

std::string HttpResult::errorCode() const {
  if (!json.is_object() || !json.contains("error") || !json["error"].is_object()) return "";
  return json["error"].value("code", "");
}

std::string newApiToken() {
  unsigned char bytes[32] = {};
  {
    std::ifstream in("/dev/urandom", std::ios::binary);
    in.read(reinterpret_cast<char*>(bytes), sizeof bytes);
    if (!in) ADD_FAILURE() << "cannot read /dev/urandom";
  }
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out = "ty_";
  // Unpadded base64url: 32 bytes are 256 bits, 43 characters of 6 bits.
  unsigned bits = 0;
  int nbits = 0;
  for (unsigned char b : bytes) {
    bits = (bits << 8) | b;
    nbits += 8;
    while (nbits >= 6) {
      nbits -= 6;
      out += kAlphabet[(bits >> nbits) & 63];
    }
  }
  if (nbits > 0) out += kAlphabet[(bits << (6 - nbits)) & 63];
  return out;
}

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
  out.headers = res->headers;
  return out;
}

std::unique_ptr<httplib::Client> client(const std::string& url, const std::string& ca_cert) {
  auto c = std::make_unique<httplib::Client>(url);
  c->set_tcp_nodelay(true);
  c->set_connection_timeout(5, 0);
  c->set_read_timeout(30, 0);
  c->set_write_timeout(30, 0);
  if (!ca_cert.empty()) {
    c->set_ca_cert_path(ca_cert);
    c->enable_server_certificate_verification(true);
  }
  return c;
}

}  // namespace

HttpResult Api::get(const std::string& path, const httplib::Headers& headers) const {
  return request("GET", path, std::nullopt, headers);
}

HttpResult Api::post(const std::string& path, const std::string& body,
                     const std::string& content_type, const httplib::Headers& headers) const {
  return request("POST", path, body, headers, content_type);
}

HttpResult Api::request(const std::string& method, const std::string& path,
                        const std::optional<std::string>& body, const httplib::Headers& headers,
                        const std::string& content_type) const {
  httplib::Request req;
  req.method = method;
  req.path = path;
  req.headers = headers;
  if (!token_.empty() && !req.has_header("Authorization")) {
    req.headers.emplace("Authorization", "Bearer " + token_);
  }
  bool wants_body = method == "POST" || method == "PUT" || method == "PATCH";
  if (body || wants_body) {
    req.body = body.value_or("{}");
    if (!req.has_header("Content-Type")) req.headers.emplace("Content-Type", content_type);
  }
  return toResult(client(url_, ca_cert_)->send(req));
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

bool ensureProject(const Api& admin, const std::string& name) {
  HttpResult r = admin.post("/api/v1/projects", Json{{"name", name}}.dump());
  if (r.status == 201 || r.status == 409) return true;
  ADD_FAILURE() << "create project " << name << " -> HTTP " << r.status << " " << r.body << r.error;
  return false;
}

std::string createUserToken(const Api& admin, const std::string& user, const std::string& project,
                            const std::string& role, const std::string& password) {
  if (!ensureProject(admin, project)) return "";
  Json new_user = {{"name", user}};
  if (!password.empty()) new_user["password"] = password;
  HttpResult r = admin.post("/api/v1/users", new_user.dump());
  if (r.status != 201 && r.status != 409) {
    ADD_FAILURE() << "create user " << user << " -> HTTP " << r.status << " " << r.body << r.error;
    return "";
  }
  r = admin.request("PUT", "/api/v1/projects/" + project + "/members/" + user,
                    Json{{"role", role}}.dump());
  if (r.status != 200) {
    ADD_FAILURE() << "make " << user << " " << role << " of " << project << " -> HTTP " << r.status
                  << " " << r.body << r.error;
    return "";
  }
  // Token names are unique per user: number them.
  static std::atomic<int> serial{0};
  Json spec = {{"name", "e2e-" + std::to_string(++serial)}, {"user", user}};
  r = admin.post("/api/v1/tokens", spec.dump());
  if (r.status != 201 || !r.json.is_object() || !r.json.contains("token") ||
      !r.json["token"].is_string()) {
    ADD_FAILURE() << "token for " << user << " -> HTTP " << r.status << " " << r.body << r.error;
    return "";
  }
  return r.json["token"].get<std::string>();
}

HostPort hostPortOf(const std::string& url) {
  HostPort out;
  std::string rest = url;
  if (auto scheme = rest.find("://"); scheme != std::string::npos) rest = rest.substr(scheme + 3);
  if (auto slash = rest.find('/'); slash != std::string::npos) rest = rest.substr(0, slash);
  auto colon = rest.rfind(':');
  if (colon == std::string::npos) return out;
  out.host = rest.substr(0, colon);
  if (out.host.size() >= 2 && out.host.front() == '[') {
    out.host = out.host.substr(1, out.host.size() - 2);
  }
  try {
    out.port = std::stoi(rest.substr(colon + 1));
  } catch (const std::exception&) {
    out.port = 0;
  }
  return out;
}

RawConnection::RawConnection(const std::string& url) {
  HostPort hp = hostPortOf(url);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<std::uint16_t>(hp.port));
  if (hp.port <= 0 || ::inet_pton(AF_INET, hp.host.c_str(), &addr.sin_addr) != 1) {
    ADD_FAILURE() << "not an IPv4 URL: " << url;
    return;
  }
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return;
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ADD_FAILURE() << "connect " << url << ": " << std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
  }
}

RawConnection::~RawConnection() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawConnection::send(const std::string& bytes) {
  size_t done = 0;
  while (fd_ >= 0 && done < bytes.size()) {
    ssize_t n = ::send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return fd_ >= 0;
}

std::string RawConnection::readAll(Millis deadline) {
  std::string out;
  std::int64_t end = nowMs() + deadline.count();
  char buf[8192];
  while (fd_ >= 0 && !closed_) {
    std::int64_t left = end - nowMs();
    if (left <= 0) break;
    pollfd p = {fd_, POLLIN, 0};
    int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    ssize_t r = ::recv(fd_, buf, sizeof buf, 0);
    if (r > 0) {
      out.append(buf, static_cast<size_t>(r));
    } else if (r == 0 || errno != EINTR) {
      closed_ = true;  // end of stream, or a reset: either way the server hung up
    }
  }
  return out;
}

std::string rawExchange(const std::string& url, const std::string& request, Millis deadline) {
  RawConnection conn(url);
  if (!conn.connected() || !conn.send(request)) return "";
  return conn.readAll(deadline);
}

int rawStatus(const std::string& answer) {
  // "HTTP/1.1 200 OK"
  if (answer.rfind("HTTP/1.", 0) != 0 || answer.size() < 12) return 0;
  try {
    return std::stoi(answer.substr(9, 3));
  } catch (const std::exception&) {
    return 0;
  }
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
  if (use_token_file_) {
    const std::string token_file = bootstrapTokenFile();
    if (admin_token_.empty()) {
      // Chosen once, so a restarted server is reached with the same token.
      admin_token_ = newApiToken();
      int fd = ::open(token_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      std::string line = admin_token_ + "\n";
      if (fd < 0 || ::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
        if (fd >= 0) ::close(fd);
        return ::testing::AssertionFailure()
               << "write " << token_file << ": " << std::strerror(errno);
      }
      ::close(fd);
    }
    argv.insert(argv.end(), {"--bootstrap-token-file", token_file});
  }
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
        HttpResult r = Api(url_, "", ca_cert_).get("/readyz");
        if (r.status == 200) {
          why.clear();
          return true;
        }
        why = "/readyz: HTTP " + std::to_string(r.status) + " " + r.body + r.error;
        return false;
      },
      deadline, 20ms);
  if (ok && why.empty()) {
    if (!use_token_file_) {
      // The server wrote its own bootstrap token before it became ready.
      std::vector<std::string> lines = splitLines(readFile(data_dir_ + "/admin.token"));
      if (!lines.empty()) admin_token_ = lines.front();
    }
    return ::testing::AssertionSuccess();
  }
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

std::map<std::string, std::string> E2eTest::cliEnv(const std::string& token) const {
  const std::string home = tmp_.sub("home");
  std::error_code ec;
  std::filesystem::create_directories(home, ec);
  std::map<std::string, std::string> env = {
      {"TRAINYARD_SERVER", server_->url()},
      {"TRAINYARD_TOKEN", token.empty() ? server_->adminToken() : token},
      {"HOME", home},
      {"XDG_CONFIG_HOME", home + "/.config"},
  };
  if (!server_->caCert().empty()) env["TRAINYARD_CA_CERT"] = server_->caCert();
  return env;
}

std::string E2eTest::userToken(const std::string& user, const std::string& project,
                               const std::string& role, const std::string& password) const {
  return createUserToken(api(), user, project, role, password);
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
