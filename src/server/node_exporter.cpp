#include "server/node_exporter.h"

#include <httplib.h>
#include <prometheus/registry.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "gpu/gpu_provider.h"
#include "gpu/gpu_sampler.h"
#include "gpu/sampling_loop.h"
#include "metrics/exposition.h"
#include "metrics/gpu_metrics.h"
#include "server/config.h"

namespace ty {
namespace {

// Scrapes are rare (one per Prometheus per interval) and cheap; two workers
// keep the agent small on a node whose CPUs belong to the jobs.
constexpr int kHttpThreads = 2;

std::string localHostName() {
  char buf[256] = {};
  if (::gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

// The samples and the registry they feed. cycle() runs on the sampling
// thread and exposition() on the HTTP workers; one mutex makes a scrape see
// whole cycles, never a GPU's old series removed and its new ones not yet
// added.
class Exporter {
 public:
  Exporter(std::unique_ptr<GpuReader> reader, const std::string& node_name)
      : sampler_(std::move(reader)), metrics_(registry_, node_name) {}

  void cycle() {
    NodeSample sample = sampler_.sample();
    // Logged when they change, not every interval: a GPU that keeps failing
    // the same way is one line, and its count is in
    // trainyard_gpu_sample_errors_total.
    if (sample.problems != last_problems_) {
      for (const std::string& p : sample.problems) spdlog::warn("sampling: {}", p);
      if (sample.problems.empty() && !last_problems_.empty()) {
        spdlog::info("sampling: all reads succeed again");
      }
      last_problems_ = sample.problems;
    }
    std::lock_guard<std::mutex> lock(mu_);
    // This agent does not know the scheduler's jobs: every GPU is shown
    // free and every process jobless. The server's /metrics fills them in.
    metrics_.update(sample, GpuAttribution{});
  }

  std::string exposition() const {
    std::lock_guard<std::mutex> lock(mu_);
    return serializeText(registry_);
  }

 private:
  GpuSampler sampler_;
  prometheus::Registry registry_;
  GpuMetrics metrics_;
  mutable std::mutex mu_;
  std::vector<std::string> last_problems_;  // sampling thread only
};

}  // namespace

int runNodeExporter(const NodeExporterConfig& config) {
  std::string host;
  int port = 0;
  if (Status st = parseListen(config.listen, host, port); !st.isOk()) {
    spdlog::error("--listen: {}", st.message());
    return 2;
  }
  if (config.interval <= 0) {
    spdlog::error("--interval: must be a positive duration such as 5s or 500ms");
    return 2;
  }
  std::string node = config.node_name.empty() ? localHostName() : config.node_name;

  std::unique_ptr<GpuReader> reader;
  if (!config.fake_gpus.empty()) {
    Result<std::vector<GpuInfo>> gpus = parseFakeGpus(config.fake_gpus, node);
    if (!gpus.isOk()) {
      spdlog::error("{}: {}", gpus.status().field(), gpus.status().message());
      return 2;
    }
    spdlog::info("{} fake GPUs ({}), shown idle", gpus->size(), config.fake_gpus);
    reader = newFakeGpuReader(std::move(*gpus));
  } else {
    Result<std::unique_ptr<GpuReader>> nvml = openNvmlGpuReader(config.nvml_library);
    if (!nvml.isOk()) {
      spdlog::error("cannot load NVML: {} (use --nvml-library, or --fake-gpus to try it out)",
                    nvml.status().message());
      return 1;
    }
    reader = std::move(*nvml);
  }

  // Signals are taken by one thread with sigwait; the threads started below
  // inherit the mask.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  Exporter exporter(std::move(reader), node);
  exporter.cycle();  // the first scrape already has values

  httplib::Server http;
  http.new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  http.Get("/metrics", [&exporter](const httplib::Request&, httplib::Response& res) {
    res.set_content(exporter.exposition(), kPrometheusTextContentType);
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  int bound = port == 0 ? http.bind_to_any_port(host) : (http.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    spdlog::error("cannot listen on {}:{}: address in use or not available here", host, port);
    return 1;
  }

  SamplingLoop loop(config.interval, [&exporter] { exporter.cycle(); });
  std::thread signals([&http, &stop_signals] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig != 0) spdlog::info("got {}, shutting down", strsignal(sig));
    http.stop();
  });
  spdlog::info("node {}: listening on http://{}:{} (GET /metrics every {})", node, host, bound,
               formatDuration(config.interval));
  http.listen_after_bind();
  // listen_after_bind() also returns when the server fails: make the signal
  // thread return too.
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  loop.stop();
  spdlog::info("stopped");
  return 0;
}

void addNodeExporterCommand(CLI::App& app) {
  auto config = std::make_shared<NodeExporterConfig>();
  auto interval = std::make_shared<std::string>("5s");
  CLI::App* cmd = app.add_subcommand(
      "node-exporter",
      "Serve this node's GPU metrics (DCGM exporter names) to Prometheus at GET /metrics; no "
      "authentication: listen on a private address");
  cmd->add_option("--listen", config->listen, "HOST:PORT to serve on (port 0: any free port)")
      ->required();
  cmd->add_option("--nvml-library", config->nvml_library, "NVML library to load")
      ->capture_default_str();
  cmd->add_option("--fake-gpus", config->fake_gpus,
                  "Serve these idle GPUs instead of NVML's, e.g. 4xA100-80GB");
  cmd->add_option("--interval", *interval, "Time between two samples, e.g. 5s or 500ms")
      ->capture_default_str();
  cmd->add_option("--node-name", config->node_name,
                  "The Hostname label of every series (default: the host name)");
  cmd->callback([config, interval] {
    NodeExporterConfig c = *config;
    c.interval = parseDuration(*interval);
    if (c.interval <= 0) {
      spdlog::error("--interval: \"{}\" is not a positive duration such as 5s or 500ms", *interval);
      std::exit(2);
    }
    std::exit(runNodeExporter(c));
  });
}

}  // namespace ty
