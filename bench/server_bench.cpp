// End-to-end benchmarks of a real `trainyard server` on this machine: it is
// started with a fresh data dir and fake GPUs, driven over HTTP, stopped.
//
//   server_bench latency [--jobs 1000]   submit -> process running, one job at a time
//   server_bench submit  [--jobs 20000] [--clients 16]   durable submissions per second
//   server_bench e2e     [--jobs 10000] [--clients 16]   trivial jobs submit -> succeeded
//
// The binary is $TRAINYARD_BIN or ./build/trainyard. Numbers are printed,
// never asserted; docs/benchmarks.md records them with this command.
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "codec/job_codec.h"

namespace {

using ty::Json;
using Clock = std::chrono::steady_clock;

std::int64_t wallNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The server being measured, so that a failure does not leave it behind.
pid_t g_server_pid = -1;

[[noreturn]] void die(const std::string& msg) {
  std::cerr << "server_bench: " << msg << "\n";
  if (g_server_pid > 0) kill(g_server_pid, SIGKILL);
  std::exit(1);
}

class Server {
 public:
  explicit Server(const std::string& fake_gpus) {
    const char* bin_env = std::getenv("TRAINYARD_BIN");
    std::string bin = bin_env ? bin_env : "./build/trainyard";
    char tmpl[] = "/tmp/ty-bench-XXXXXX";
    if (!mkdtemp(tmpl)) die("mkdtemp failed");
    dir_ = tmpl;
    pid_ = fork();
    if (pid_ < 0) die("fork failed");
    if (pid_ == 0) {
      std::string log = dir_ + "/server.log";
      FILE* f = std::freopen(log.c_str(), "w", stderr);
      (void)f;
      execl(bin.c_str(), bin.c_str(), "server", "--listen", "127.0.0.1:0", "--data-dir",
            dir_.c_str(), "--fake-gpus", fake_gpus.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    auto deadline = Clock::now() + std::chrono::seconds(20);
    while (Clock::now() < deadline) {
      std::ifstream in(dir_ + "/server.url");
      if (in >> url_) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    g_server_pid = pid_;
    if (url_.empty()) die("server did not start; see " + dir_ + "/server.log");
  }
  ~Server() {
    kill(pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  void crash() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  const std::string& url() const { return url_; }
  const std::string& dir() const { return dir_; }

 private:
  pid_t pid_ = -1;
  std::string dir_;
  std::string url_;
};

// One of the benchmark's concurrent clients: a kept-alive connection
// without Nagle's delay, as a real client library would use.
void loadClient(httplib::Client& c) {
  c.set_read_timeout(60, 0);
  c.set_keep_alive(true);
  c.set_tcp_nodelay(true);
}

Json getJson(httplib::Client& c, const std::string& path) {
  auto r = c.Get(path);
  if (!r || r->status != 200) die("GET " + path + " failed");
  return Json::parse(r->body);
}

std::int64_t submit(httplib::Client& c, const Json& spec) {
  auto r = c.Post("/api/v1/jobs", spec.dump(), "application/json");
  if (!r || r->status != 201)
    die("submit failed: " + (r ? r->body : httplib::to_string(r.error())));
  return Json::parse(r->body)["id"].get<std::int64_t>();
}

double pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  return v[i];
}

void report(const char* what, const std::vector<double>& ms) {
  std::printf("%s over %zu: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms\n", what, ms.size(),
              pct(ms, 50), pct(ms, 90), pct(ms, 99), pct(ms, 100));
}

void latency(int jobs) {
  Server s("4xA100-80GB");
  httplib::Client c(s.url());
  c.set_tcp_nodelay(true);
  std::vector<double> to_process, to_running_state;
  Json spec = {{"command", {"/bin/date", "+%s%N"}}, {"resources", {{"gpus", 1}}}};
  for (int i = 0; i < jobs; ++i) {
    std::int64_t t0 = wallNs();
    std::int64_t id = submit(c, spec);
    std::string path = "/api/v1/jobs/" + std::to_string(id);
    Json job;
    while (true) {
      job = getJson(c, path);
      std::string st = job["state"];
      if (st == "succeeded" || st == "failed") break;
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    }
    auto log = c.Get(path + "/logs");
    if (!log || log->body.empty()) die("no log for job " + std::to_string(id));
    std::int64_t started_ns = std::stoll(log->body);
    to_process.push_back(static_cast<double>(started_ns - t0) / 1e6);
    to_running_state.push_back(static_cast<double>(job["started_at"].get<std::int64_t>() -
                                                   job["created_at"].get<std::int64_t>()));
  }
  report("submit -> process running (first instruction of the job)", to_process);
  report("created_at -> started_at (server timestamps, ms resolution)", to_running_state);
}

void submitRate(int jobs, int clients) {
  Server s("1xA100-80GB");
  httplib::Client c(s.url());
  c.set_tcp_nodelay(true);
  // One job holds the only GPU, so every benchmark submission stays queued
  // and the figure is the cost of durable acceptance, not of running jobs.
  std::int64_t blocker = submit(c, {{"command", {"sleep", "3600"}}, {"resources", {{"gpus", 1}}}});
  std::vector<double> lat;
  std::mutex mu;
  std::atomic<int> next{0};
  auto t0 = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      httplib::Client cc(s.url());
      loadClient(cc);
      std::vector<double> mine;
      Json spec = {{"command", {"/bin/true"}}, {"resources", {{"gpus", 1}}}};
      while (next.fetch_add(1) < jobs) {
        auto a = Clock::now();
        submit(cc, spec);
        mine.push_back(std::chrono::duration<double, std::milli>(Clock::now() - a).count());
      }
      std::lock_guard l(mu);
      lat.insert(lat.end(), mine.begin(), mine.end());
    });
  }
  for (auto& t : threads) t.join();
  double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf("%d durable submissions with %d clients in %.2f s: %.0f submissions/s\n", jobs,
              clients, secs, jobs / secs);
  report("submission round trip", lat);
  Json b = getJson(c, "/api/v1/jobs/" + std::to_string(blocker));
  std::int64_t pid = b["attempt"]["pids"][0];
  s.crash();  // leave the queue behind; only the blocker runs
  if (pid > 0) kill(static_cast<pid_t>(-pid), SIGKILL);
}

void e2e(int jobs, int clients) {
  Server s("64xA100-80GB");
  std::atomic<int> next{0};
  std::int64_t t0 = wallNs() / 1'000'000;
  auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int t = 0; t < clients; ++t) {
    threads.emplace_back([&] {
      httplib::Client cc(s.url());
      loadClient(cc);
      Json spec = {{"command", {"/bin/true"}}, {"resources", {{"gpus", 1}}}};
      while (next.fetch_add(1) < jobs) submit(cc, spec);
    });
  }
  for (auto& t : threads) t.join();
  double submit_secs = std::chrono::duration<double>(Clock::now() - start).count();
  httplib::Client c(s.url());
  c.set_tcp_nodelay(true);
  for (const char* st : {"pending", "scheduled", "running"}) {
    while (!getJson(c, std::string("/api/v1/jobs?limit=1&state=") + st)["jobs"].empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  // The last job to finish, from the server's own timestamps.
  std::int64_t last = 0;
  int succeeded = 0;
  std::string next_page = "/api/v1/jobs?limit=1000";
  while (true) {
    Json page = getJson(c, next_page);
    for (const auto& j : page["jobs"]) {
      last = std::max(last, j["finished_at"].get<std::int64_t>());
      if (j["state"] == "succeeded") ++succeeded;
    }
    if (page["next_before"].is_null()) break;
    next_page =
        "/api/v1/jobs?limit=1000&before=" + std::to_string(page["next_before"].get<std::int64_t>());
  }
  double secs = static_cast<double>(last - t0) / 1000.0;
  std::printf(
      "%d trivial jobs (1 fake GPU each, 64 GPUs): submitted in %.2f s, all ended in %.2f s: "
      "%.0f jobs/s end to end; %d succeeded\n",
      jobs, submit_secs, secs, jobs / secs, succeeded);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: server_bench latency|submit|e2e [--jobs N] [--clients N]\n";
    return 2;
  }
  std::string mode = argv[1];
  int jobs = mode == "latency" ? 1000 : mode == "submit" ? 20000 : 10000;
  int clients = 16;
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    if (k == "--jobs")
      jobs = std::atoi(argv[i + 1]);
    else if (k == "--clients")
      clients = std::atoi(argv[i + 1]);
    else
      die("unknown option " + k);
  }
  if (mode == "latency")
    latency(jobs);
  else if (mode == "submit")
    submitRate(jobs, clients);
  else if (mode == "e2e")
    e2e(jobs, clients);
  else
    die("unknown mode " + mode);
  return 0;
}
