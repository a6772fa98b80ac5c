// `trainyard node-exporter` through the real binary: GPUs scripted in the
// fake NVML (FAKE_NVML_LIB, loaded by the exporter with dlopen) come out at
// GET /metrics under the DCGM exporter's names.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>

#include "harness.h"

#ifndef FAKE_NVML_LIB
#error "FAKE_NVML_LIB must name the fake NVML library (tests/e2e/CMakeLists.txt)"
#endif

namespace ty::e2e {
namespace {

// A `trainyard node-exporter` child, its output in a log file; SIGKILLed
// on destruction if still running.
class ExporterProcess {
 public:
  ExporterProcess(std::vector<std::string> args, std::map<std::string, std::string> env,
                  std::string log_path)
      : args_(std::move(args)), env_(std::move(env)), log_path_(std::move(log_path)) {}
  ~ExporterProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  ExporterProcess(const ExporterProcess&) = delete;
  ExporterProcess& operator=(const ExporterProcess&) = delete;

  // Starts it and waits until it logs the address it serves on.
  ::testing::AssertionResult start(Millis deadline = 15s) {
    std::vector<std::string> argv = {trainyardBin(), "node-exporter"};
    argv.insert(argv.end(), args_.begin(), args_.end());
    // Everything the child needs is built before fork(): after it, only
    // async-signal-safe calls.
    std::vector<std::string> envs;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string entry = *e;
      if (env_.count(entry.substr(0, entry.find('='))) == 0) envs.push_back(entry);
    }
    for (const auto& [name, value] : env_) envs.push_back(name + "=" + value);
    std::vector<char*> raw_argv;
    for (std::string& a : argv) raw_argv.push_back(a.data());
    raw_argv.push_back(nullptr);
    std::vector<char*> raw_env;
    for (std::string& e : envs) raw_env.push_back(e.data());
    raw_env.push_back(nullptr);
    int fd = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return ::testing::AssertionFailure() << "cannot open " << log_path_;
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(fd);
      return ::testing::AssertionFailure() << "fork failed";
    }
    if (pid_ == 0) {
      ::dup2(fd, 1);  // dup2 clears O_CLOEXEC on the copies
      ::dup2(fd, 2);
      ::execve(raw_argv[0], raw_argv.data(), raw_env.data());
      ::_exit(127);
    }
    ::close(fd);
    const std::string marker = "listening on http://";
    bool up = waitFor(
        [&] {
          std::string log = readFile(log_path_);
          std::size_t at = log.find(marker);
          if (at == std::string::npos) return false;
          std::size_t end = log.find_first_of(" \n", at + marker.size());
          url_ = log.substr(at + marker.size() - 7, end - (at + marker.size() - 7));
          return true;
        },
        deadline);
    if (!up) return ::testing::AssertionFailure() << "no address logged:\n" << readFile(log_path_);
    return ::testing::AssertionSuccess();
  }

  // SIGTERM, then its exit code (-1 when it had to be killed).
  int stop(Millis deadline = 10s) {
    ::kill(pid_, SIGTERM);
    int status = 0;
    bool exited = waitFor([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, deadline);
    if (!exited) return -1;  // the destructor kills it
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }

  const std::string& url() const { return url_; }
  std::string log() const { return readFile(log_path_); }

 private:
  std::vector<std::string> args_;
  std::map<std::string, std::string> env_;
  std::string log_path_;
  pid_t pid_ = -1;
  std::string url_;
};

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST(NodeExporterTest, ServesTheScriptedGpusUnderDcgmNames) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  TempDir tmp;
  ExporterProcess exporter({"--listen", "127.0.0.1:0", "--nvml-library", FAKE_NVML_LIB,
                            "--node-name", "gpu-node-7", "--interval", "200ms"},
                           {{"FAKE_NVML_GPUS", "2xA100-80GB"},
                            {"FAKE_NVML_GPU_UTIL", "87,3"},
                            {"FAKE_NVML_POWER_MW", "-,61000"},
                            {"FAKE_NVML_PROCESSES", "4321:1024;"}},
                           tmp.sub("exporter.log"));
  ASSERT_TRUE(exporter.start());
  Api api(exporter.url());

  HttpResult metrics = api.get("/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.error << exporter.log();
  EXPECT_TRUE(contains(metrics.header("Content-Type"), "text/plain; version=0.0.4"))
      << metrics.header("Content-Type");
  const std::string& text = metrics.body;
  EXPECT_TRUE(contains(text, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")) << text;
  EXPECT_TRUE(contains(text,
                       "DCGM_FI_DEV_GPU_UTIL{Hostname=\"gpu-node-7\",UUID=\"GPU-00000000-0000-4000-"
                       "8000-000000000000\",device=\"nvidia0\",gpu=\"0\",job=\"\",modelName=\""
                       "NVIDIA A100-80GB\",project=\"\",user=\"\"} 87\n"))
      << text;
  EXPECT_TRUE(contains(text,
                       "device=\"nvidia1\",gpu=\"1\",job=\"\",modelName=\"NVIDIA "
                       "A100-80GB\",project=\"\",user=\"\"} 3\n"))
      << text;
  // GPU 0 has no power sensor: only GPU 1 has a power series.
  EXPECT_FALSE(contains(text,
                        "DCGM_FI_DEV_POWER_USAGE{Hostname=\"gpu-node-7\",UUID=\"GPU-"
                        "00000000-0000-4000-8000-000000000000\""))
      << text;
  EXPECT_TRUE(contains(text,
                       "gpu=\"1\",job=\"\",modelName=\"NVIDIA A100-80GB\",project=\"\","
                       "user=\"\"} 61\n"))
      << text;
  EXPECT_TRUE(contains(text,
                       "trainyard_gpu_process_memory_bytes{Hostname=\"gpu-node-7\","
                       "UUID=\"GPU-00000000-0000-4000-8000-000000000000\",gpu=\"0\","
                       "job=\"\",pid=\"4321\"} 1073741824\n"))
      << text;
  EXPECT_TRUE(contains(text, "trainyard_gpu_sample_errors_total{Hostname=\"gpu-node-7\"} 0\n"))
      << text;

  HttpResult health = api.get("/healthz");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(health.body, "ok\n");

  EXPECT_EQ(exporter.stop(), 0) << exporter.log();
}

TEST(NodeExporterTest, FakeGpusNeedNoNvml) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  TempDir tmp;
  ExporterProcess exporter(
      {"--listen", "127.0.0.1:0", "--fake-gpus", "1xH100-80GB", "--nvml-library",
       "/nonexistent/libnvidia-ml.so.1", "--node-name", "n1"},
      {}, tmp.sub("exporter.log"));
  ASSERT_TRUE(exporter.start());
  HttpResult metrics = Api(exporter.url()).get("/metrics");
  ASSERT_EQ(metrics.status, 200) << exporter.log();
  EXPECT_TRUE(contains(metrics.body,
                       "DCGM_FI_DEV_FB_FREE{Hostname=\"n1\",UUID=\"GPU-fake-n1-0\","
                       "device=\"nvidia0\",gpu=\"0\",job=\"\",modelName=\"H100-80GB"
                       "\",project=\"\",user=\"\"} 81920\n"))
      << metrics.body;
  EXPECT_FALSE(contains(metrics.body, "DCGM_FI_DEV_GPU_TEMP{")) << metrics.body;
  EXPECT_EQ(exporter.stop(), 0) << exporter.log();
}

TEST(NodeExporterTest, WithoutNvmlItStopsNamingTheLibrary) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  ProcResult r = runCli({"node-exporter", "--listen", "127.0.0.1:0", "--nvml-library",
                         "/nonexistent/libnvidia-ml.so.1"},
                        {}, 10s);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "/nonexistent/libnvidia-ml.so.1")) << r.err;
}

TEST(NodeExporterTest, ABadIntervalIsRefused) {
  if (trainyardBin().empty()) GTEST_SKIP() << "TRAINYARD_BIN is not set";
  ProcResult r = runCli(
      {"node-exporter", "--listen", "127.0.0.1:0", "--fake-gpus", "1xA100", "--interval", "often"},
      {}, 10s);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "--interval")) << r.err;
}

}  // namespace
}  // namespace ty::e2e
