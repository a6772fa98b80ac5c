// Harness of the end-to-end tests: starts the real `trainyard` binary
// (TRAINYARD_BIN) on 127.0.0.1 port 0 over a temporary data dir, talks to
// it over HTTP and through its CLI, and looks at processes through /proc.
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
// stdin from /dev/null, capturing stdout and stderr. Killed (SIGKILL) at
// `timeout`.
ProcResult runProcess(const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env = {}, Millis timeout = 30s);
// `trainyard <args...>`.
ProcResult runCli(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}, Millis timeout = 30s);

// An HTTP answer: status (0 when the server could not be reached), body,
// and the body parsed as JSON (discarded when it is not JSON).
struct HttpResult {
  int status = 0;
  std::string body;
  Json json;
  std::string error;  // transport error, when status is 0
};

// A small HTTP client for one server; a fresh connection per call, so it is
// safe to use from several threads.
class Api {
 public:
  explicit Api(std::string url) : url_(std::move(url)) {}
  const std::string& url() const { return url_; }
  HttpResult get(const std::string& path, const httplib::Headers& headers = {}) const;
  HttpResult post(const std::string& path, const std::string& body,
                  const std::string& content_type = "application/json",
                  const httplib::Headers& headers = {}) const;
  // Any method, for the route coverage check.
  HttpResult request(const std::string& method, const std::string& path) const;

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
};

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
  Api api() const { return Api(url_); }
  // The server's output so far, for failure messages.
  std::string log() const;

 private:
  std::string data_dir_;
  std::string log_path_;
  std::vector<std::string> args_;
  pid_t pid_ = -1;
  std::string url_;
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

  TempDir tmp_;
  std::string data_dir_;
  std::unique_ptr<ServerProcess> server_;
  Api api() const { return server_->api(); }
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
