// A real Prometheus (the Debian `prometheus` package) scraping a real
// server: the series the dashboards and alerts read arrive with the labels
// they select on, through the relabelling of deploy/prometheus/prometheus.yml.
//
// Skipped, saying why, only when /usr/bin/prometheus is not installed
// (scripts/dev.sh installs it with the test packages).
#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "harness.h"

namespace ty::e2e {
namespace {

constexpr const char* kPrometheus = "/usr/bin/prometheus";

// A TCP port that was free a moment ago on 127.0.0.1. Prometheus binds it
// itself, so another process could take it in between; start() says so
// when Prometheus cannot listen.
int freeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// A Prometheus child over a config and TSDB in `dir`, its output in
// dir/prometheus.log; stopped (SIGTERM, then SIGKILL) and reaped on
// destruction.
class PrometheusProcess {
 public:
  explicit PrometheusProcess(std::string dir) : dir_(std::move(dir)) {}
  ~PrometheusProcess() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGTERM);
    bool gone = waitFor([&] { return ::waitpid(pid_, nullptr, WNOHANG) == pid_; }, 10s, 50ms);
    if (!gone) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  PrometheusProcess(const PrometheusProcess&) = delete;
  PrometheusProcess& operator=(const PrometheusProcess&) = delete;

  // Writes a config that scrapes `target` (host:port) every second as the
  // scrape job "trainyard", starts Prometheus and waits until it is ready.
  ::testing::AssertionResult start(const std::string& target, Millis deadline = 60s) {
    port_ = freeLoopbackPort();
    if (port_ == 0) return ::testing::AssertionFailure() << "no free port";
    // The scrape job and relabelling of deploy/prometheus/prometheus.yml:
    // the server's job="<id>" is stored by Prometheus as exported_job, which
    // becomes trainyard_job.
    writeFile(dir_ + "/prometheus.yml", R"(global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: trainyard
    metrics_path: /metrics
    static_configs:
      - targets: [")" + target + R"("]
    metric_relabel_configs:
      - source_labels: [exported_job]
        regex: (.+)
        target_label: trainyard_job
      - action: labeldrop
        regex: exported_job
)");
    std::vector<std::string> argv = {kPrometheus, "--config.file=" + dir_ + "/prometheus.yml",
                                     "--storage.tsdb.path=" + dir_ + "/tsdb",
                                     "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                     "--log.level=warn"};
    std::vector<char*> raw;
    for (std::string& a : argv) raw.push_back(a.data());
    raw.push_back(nullptr);
    const std::string log_path = dir_ + "/prometheus.log";
    int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return ::testing::AssertionFailure() << "cannot open " << log_path;
    pid_ = ::fork();
    if (pid_ < 0) {
      ::close(fd);
      return ::testing::AssertionFailure() << "fork failed";
    }
    if (pid_ == 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
      ::execv(raw[0], raw.data());
      ::_exit(127);
    }
    ::close(fd);
    Api web = api();
    bool ready = waitFor(
        [&] {
          if (::waitpid(pid_, nullptr, WNOHANG) == pid_) {
            pid_ = -1;  // exited: no point waiting
            return true;
          }
          return web.get("/-/ready").status == 200;
        },
        deadline, 100ms);
    if (!ready || pid_ < 0) {
      return ::testing::AssertionFailure()
             << "Prometheus did not become ready on 127.0.0.1:" << port_ << ":\n"
             << readFile(log_path);
    }
    return ::testing::AssertionSuccess();
  }

  Api api() const { return Api("http://127.0.0.1:" + std::to_string(port_)); }
  // The result vector of an instant query; an empty array when it fails.
  Json query(const std::string& promql) const {
    HttpResult r = api().get(httplib::append_query_params("/api/v1/query", {{"query", promql}}));
    if (r.status != 200 || r.json.value("status", "") != "success") return Json::array();
    return r.json["data"]["result"];
  }
  std::string log() const { return readFile(dir_ + "/prometheus.log"); }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class PrometheusTest : public E2eTest {
 protected:
  std::vector<std::string> serverArgs() const override { return {"--fake-gpus", "2xA100-80GB"}; }
};

TEST_F(PrometheusTest, ScrapesTheServersSchedulerAndGpuSeries) {
  if (::access(kPrometheus, X_OK) != 0) {
    GTEST_SKIP() << kPrometheus
                 << " is not installed (Debian package prometheus; scripts/dev.sh deps "
                    "installs it): the Prometheus integration test cannot run";
  }
  // One job holds a GPU; one asks for both and waits behind it.
  const std::int64_t running = api().submit(scriptJob("sleep 300", 1));
  ASSERT_GT(running, 0);
  ASSERT_TRUE(api().waitState(running, "running")) << api().job(running).dump();
  const std::int64_t waiting = api().submit(scriptJob("true", 2));
  ASSERT_GT(waiting, 0);

  const HostPort server = hostPortOf(server_->url());
  PrometheusProcess prometheus(tmp_.sub("prometheus"));
  std::filesystem::create_directories(tmp_.sub("prometheus"));
  ASSERT_TRUE(prometheus.start(server.host + ":" + std::to_string(server.port)));

  const std::string id = std::to_string(running);
  // Each condition is polled until the scrapes (every second) deliver it.
  auto eventually = [&](const std::string& promql) {
    Json result;
    bool found = waitFor(
        [&] {
          result = prometheus.query(promql);
          return result.is_array() && !result.empty();
        },
        60s, 250ms);
    return found ? ::testing::AssertionSuccess()
                 : ::testing::AssertionFailure() << "no result for " << promql << "\n"
                                                 << prometheus.log();
  };
  EXPECT_TRUE(eventually(R"(up{job="trainyard"} == 1)"));
  // The GPU the job holds, with its id under trainyard_job (the server's
  // job label, renamed by the relabelling) and the scrape job kept as job.
  EXPECT_TRUE(
      eventually(R"(trainyard_gpu_allocated{job="trainyard",trainyard_job=")" + id + R"("} == 1)"));
  // Utilisation by job, where the server exports it: the server's own
  // /metrics decides whether Prometheus must have it.
  HttpResult metrics = api().anonymous().get("/metrics");
  ASSERT_EQ(metrics.status, 200) << metrics.body;
  if (metrics.body.find("DCGM_FI_DEV_GPU_UTIL{") != std::string::npos) {
    EXPECT_TRUE(eventually(R"(DCGM_FI_DEV_GPU_UTIL{trainyard_job=")" + id + R"("})"));
  } else {
    std::cerr << "the server exports no DCGM_FI_DEV_GPU_UTIL: not checked in Prometheus\n";
  }
  EXPECT_TRUE(eventually("sum(trainyard_queue_pending_jobs) >= 1"));
  EXPECT_TRUE(eventually("trainyard_scheduling_pass_duration_seconds_count > 0"));
  EXPECT_TRUE(eventually(R"(trainyard_scheduling_decisions_total{kind="start"} >= 1)"));
  EXPECT_TRUE(
      eventually(R"(trainyard_store_operation_duration_seconds_count{operation="commit"} > 0)"));
  // Declared at zero before any failure, so increase() sees the first one.
  EXPECT_TRUE(eventually(R"(trainyard_job_failures_total{reason="exit_code"} == 0)"));

  // The waiting job first: with the GPU free it would start.
  api().request("POST", "/api/v1/jobs/" + std::to_string(waiting) + "/cancel");
  api().waitDone(waiting);
  api().request("POST", "/api/v1/jobs/" + id + "/cancel");
  api().waitDone(running);
}

}  // namespace
}  // namespace ty::e2e
