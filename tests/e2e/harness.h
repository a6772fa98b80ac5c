// Harness of the end-to-end tests: starts the real `trainyard` binary
// (TRAINYARD_BIN) on 127.0.0.1 port 0 over a temporary data dir, talks to
// it over HTTP(S) and through its CLI, and looks at processes through /proc.
//
// Every API route but login and the probes needs credentials, so each
// server gets a bootstrap admin token chosen here (ServerProcess::adminToken)
// and every Api sends it unless told otherwise.
//
// Nothing here waits for luck: every wait polls a condition against a
// deadline and says what it was waiting for when the deadline passes.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "codec/job_codec.h"

namespace ty::e2e {

using namespace std::chrono_literals;
using Millis = std::chrono::milliseconds;

// The `trainyard` executable under test; empty when TRAINYARD_BIN is unset.
std::string trainyardBin();

// A fresh directory under $TMPDIR (or /tmp), removed with its contents on
// destruction. Its path is unique, so it doubles as a marker for the
// processes a test started.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Polls `pred` every `every` until it is true or `deadline` has passed;
// returns the last result.
bool waitFor(const std::function<bool()>& pred, Millis deadline, Millis every = 20ms);

struct ProcResult {
  int exit_code = -1;  // 128+signal when killed; -1 when it could not start
  std::string out;
  std::string err;
  bool timed_out = false;
};

// Runs argv (argv[0] a path) with the current environment plus `env`,
// capturing stdout and stderr. Stdin is `input` (a pipe that ends after it;
// keep it small, it is written before the output is read), /dev/null
// without. Killed (SIGKILL) at `timeout`.
ProcResult runProcess(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env = {}, Millis timeout = 30s,
                      const std::optional<std::string>& input = std::nullopt);
// `trainyard <args...>`.
ProcResult runCli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}, Millis timeout = 30s,
                  const std::optional<std::string>& input = std::nullopt);

// An HTTP answer: status (0 when the server could not be reached), body,
// the body parsed as JSON (discarded when it is not JSON) and the headers.
struct HttpResult {
  int status = 0;
  std::string body;
  Json json;
  std::string error;  // transport error, when status is 0
  httplib::Headers headers;
  // The first value of header `name` (case-insensitive), "" when absent.
  std::string header(const std::string& name) const;
  // json["error"]["code"], "" when the body is not an error document.
  std::string errorCode() const;
};

// A fresh API token as the server makes them: "ty_" and 43 characters of
// unpadded base64url (32 random bytes from /dev/urandom).
std::string newApiToken();

// A small HTTP(S) client for one server; a fresh connection per call, so it
// is safe to use from several threads. Sends `Authorization: Bearer <token>`
// on every call when it has a token, unless the call passes its own
// Authorization header.
class Api {
 public:
  // `ca_cert`: a PEM file to verify an https:// server with.
  explicit Api(std::string url, std::string token = "", std::string ca_cert = "")
      : url_(std::move(url)), token_(std::move(token)), ca_cert_(std::move(ca_cert)) {}
  const std::string& url() const { return url_; }
  const std::string& token() const { return token_; }
  // The same server with another token, or with no credentials at all.
  Api withToken(std::string token) const { return Api(url_, std::move(token), ca_cert_); }
  Api anonymous() const { return withToken(""); }

  HttpResult get(const std::string& path, const httplib::Headers& headers = {}) const;
  HttpResult post(const std::string& path, const std::string& body,
                  const std::string& content_type = "application/json",
                  const httplib::Headers& headers = {}) const;
  // Any method (GET, POST, PUT, PATCH, DELETE, HEAD, OPTIONS). Without a
  // body, POST, PUT and PATCH send "{}" and the others none.
  HttpResult request(const std::string& method, const std::string& path,
                     const std::optional<std::string>& body = std::nullopt,
                     const httplib::Headers& headers = {},
                     const std::string& content_type = "application/json") const;

  // POST /api/v1/jobs; returns the new id, or 0 (with a test failure) when
  // the answer is not 201.
  std::int64_t submit(const Json& spec, const httplib::Headers& headers = {}) const;
  // GET /api/v1/jobs/{id} (a null Json when it fails).
  Json job(std::int64_t id) const;
  // The job's state, "" when the job cannot be read.
  std::string state(std::int64_t id) const;
  // Waits until the job is in a terminal state; returns the job (null Json
  // and a test failure on timeout).
  Json waitDone(std::int64_t id, Millis deadline = 20s) const;
  // Waits until the job is in `state`.
  bool waitState(std::int64_t id, const std::string& state, Millis deadline = 20s) const;
  // Events and attempts of a job.
  Json events(std::int64_t id) const;
  Json attempts(std::int64_t id) const;
  // "reason: message" lines of the job's events.
  std::vector<std::string> eventLines(std::int64_t id) const;
  // The whole log of replica `replica` (latest attempt).
  std::string logs(std::int64_t id, int replica = 0) const;

 private:
  std::string url_;
  std::string token_;
  std::string ca_cert_;
};

// Through `admin` (an Api with a global admin's token): creates project
// `project` and user `user` when they are missing (with `password` when
// not empty), gives the user `role` ("admin", "engineer", "data-engineer",
// "viewer") in the project and returns a new API token of the user. "" and
// a test failure when a step is refused.
std::string createUserToken(const Api& admin, const std::string& user, const std::string& project,
                            const std::string& role, const std::string& password = "");
// Creates project `name` unless it exists; false (and a test failure) when
// the server refuses.
bool ensureProject(const Api& admin, const std::string& name);

// "http://127.0.0.1:1234" -> {"127.0.0.1", 1234}; port 0 when unparsable.
struct HostPort {
  std::string host;
  int port = 0;
};
HostPort hostPortOf(const std::string& url);

// A plain TCP connection to a server, for what no HTTP client sends: raw
// request targets, half a request, plain HTTP to a TLS port. Not
// thread-safe; closed on destruction.
class RawConnection {
 public:
  explicit RawConnection(const std::string& url);
  ~RawConnection();
  RawConnection(const RawConnection&) = delete;
  RawConnection& operator=(const RawConnection&) = delete;
  bool connected() const { return fd_ >= 0; }
  // Writes all of `bytes`; false when the connection is gone.
  bool send(const std::string& bytes);
  // Reads until the peer closes the connection or `deadline` passes;
  // returns what came. closedByPeer() tells which.
  std::string readAll(Millis deadline);
  // True once a read saw the end of the stream or a reset.
  bool closedByPeer() const { return closed_; }

 private:
  int fd_ = -1;
  bool closed_ = false;
};

// Sends `request` (a whole HTTP/1.1 request, "Connection: close" advised)
// over a RawConnection and returns the raw answer (status line, headers,
// body).
std::string rawExchange(const std::string& url, const std::string& request, Millis deadline = 10s);
// The status code of a raw answer; 0 when it is not an HTTP answer.
int rawStatus(const std::string& answer);

bool isTerminalState(const std::string& state);
// True when any of `lines` contains `needle`.
bool anyContains(const std::vector<std::string>& lines, const std::string& needle);
std::string joinLines(const std::vector<std::string>& lines);
std::vector<std::string> splitLines(const std::string& text);

// A `trainyard server` child process over `data_dir`.
class ServerProcess {
 public:
  // `args` are extra arguments after --listen/--data-dir, by default
  // {"--fake-gpus", "4xA100-80GB"}. Server output goes to `log_path`
  // (appended, so restarts keep the earlier output).
  ServerProcess(std::string data_dir, std::string log_path,
                std::vector<std::string> args = {"--fake-gpus", "4xA100-80GB"});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // The server is started with --bootstrap-token-file naming a file beside
  // the data dir (never inside it), holding a token chosen at the first
  // start and kept across restarts. Turned off, the server bootstraps on
  // its own and adminToken() is read from <data-dir>/admin.token.
  void useBootstrapTokenFile(bool on) { use_token_file_ = on; }
  std::string bootstrapTokenFile() const { return data_dir_ + ".bootstrap.token"; }
  // A PEM file that verifies the server's certificate (for --tls-cert).
  void setCaCert(std::string path) { ca_cert_ = std::move(path); }
  const std::string& caCert() const { return ca_cert_; }

  // Starts it and waits (deadline) until server.url is written and /readyz
  // answers 200.
  ::testing::AssertionResult start(Millis deadline = 15s);
  // SIGKILL, then reaps it.
  void kill();
  // SIGTERM, then waits for it to exit; returns its exit code (-1 when it
  // had to be killed after `deadline`).
  int stop(Millis deadline = 10s);
  // stop() (if running), then start() over the same data dir.
  ::testing::AssertionResult restart(Millis deadline = 15s);

  bool running() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  const std::string& url() const { return url_; }
  const std::string& dataDir() const { return data_dir_; }
  // The global admin's token ("" before the first start without a token
  // file).
  const std::string& adminToken() const { return admin_token_; }
  // An Api that authenticates as the admin.
  Api api() const { return Api(url_, admin_token_, ca_cert_); }
  // The server's output so far, for failure messages.
  std::string log() const;

 private:
  std::string data_dir_;
  std::string log_path_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  std::string url_;
  bool use_token_file_ = true;
  std::string admin_token_;
  std::string ca_cert_;
};

// A server over a fresh temp dir, started in SetUp. The fixture of most
// tests.
class E2eTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  // Extra server arguments; override to change them before SetUp.
  virtual std::vector<std::string> serverArgs() const { return {"--fake-gpus", "4xA100-80GB"}; }
  // Waits, then checks, that no process started under this test (by data
  // dir in its command line or the marker in its environment) is left.
  void expectNoLeftoverProcesses(Millis deadline = 10s);

  // Env entry put in every job of this test (see jobSpec) so its processes
  // can be found in /proc.
  std::string markerValue() const { return tmp_.path(); }
  // A script job spec carrying the marker, 0 GPUs, grace period 1s.
  Json scriptJob(const std::string& script, int gpus = 0) const;

  // Environment for runCli against this test's server: TRAINYARD_SERVER,
  // TRAINYARD_TOKEN (`token`, the admin's when empty), TRAINYARD_CA_CERT
  // for a TLS server, and HOME and XDG_CONFIG_HOME in the test's temp dir
  // so that no saved login of the person running the tests is read or
  // written.
  std::map<std::string, std::string> cliEnv(const std::string& token = "") const;
  // createUserToken() as this server's admin.
  std::string userToken(const std::string& user, const std::string& project,
                        const std::string& role, const std::string& password = "") const;

  TempDir tmp_;
  std::string data_dir_;
  std::unique_ptr<ServerProcess> server_;
  Api api() const { return server_->api(); }
  Api apiAs(const std::string& token) const { return server_->api().withToken(token); }
};

inline constexpr const char* kMarkerEnv = "TY_E2E_MARKER";

// /proc helpers. A zombie counts as dead.
bool processAlive(pid_t pid);
// Pids of live processes whose command line or environment contains
// `needle` (the caller excluded).
std::vector<pid_t> processesMentioning(const std::string& needle);
// "pid: cmdline" lines, for failure messages.
std::string describeProcesses(const std::vector<pid_t>& pids);

// Reads a whole file ("" when missing).
std::string readFile(const std::string& path);
bool fileExists(const std::string& path);
void writeFile(const std::string& path, const std::string& text);

}  // namespace ty::e2e
