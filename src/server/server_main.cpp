#include "server/server_main.h"

#include <fcntl.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "api/api_server.h"
#include "auth/job_tokens.h"
#include "exec/local/local_executor.h"
#include "exec/local/sys_util.h"
#include "gpu/gpu_provider.h"
#include "gpu/host.h"
#include "gpu/topology.h"
#include "server/bootstrap.h"
#include "server/config.h"
#include "server/gpu_monitor.h"
#include "server/job_environment.h"
#include "server/job_service.h"
#include "server/metric_ingester.h"
#include "server/pass_metrics.h"
#include "server/webhook_notifier.h"

namespace ty {
namespace {

// Holds an exclusive lock on the data directory for the life of the
// process: two servers over one store would place the same jobs twice.
Result<sys::UniqueFd> lockDataDir(const std::string& data_dir) {
  std::string path = data_dir + "/server.lock";
  sys::UniqueFd fd(::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
  if (!fd.valid()) return sys::errnoStatus("open", path);
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    return Status::failedPrecondition("another trainyard server is using " + data_dir +
                                      "; stop it first or choose another --data-dir");
  }
  return fd;
}

int runServer(const ServerConfig& config) {
  std::string host;
  int port = 0;
  if (Status st = parseListen(config.listen, host, port); !st.isOk()) {
    spdlog::error("--listen: {}", st.message());
    return 2;
  }

  // Signals are taken by one thread with sigwait; every other thread,
  // including the ones started below, has them blocked.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::error_code ec;
  std::filesystem::create_directories(config.data_dir, ec);
  if (ec) {
    spdlog::error("cannot create data dir {}: {}", config.data_dir, ec.message());
    return 1;
  }
  std::string data_dir = std::filesystem::absolute(config.data_dir).lexically_normal().string();
  auto data_lock = lockDataDir(data_dir);
  if (!data_lock.isOk()) {
    spdlog::error("{}", data_lock.status().message());
    return 1;
  }
  auto store = openSqliteStore(data_dir + "/trainyard.db");
  if (!store.isOk()) {
    spdlog::error("open store: {}", store.status().toString());
    return 1;
  }

  Result<LocalNode> local = describeServerNode(config);
  if (!local.isOk()) {
    const Status& st = local.status();
    spdlog::error("{}{}", st.field().empty() ? "" : st.field() + ": ", st.message());
    return 2;
  }
  if (!local->gpu_warning.empty()) {
    spdlog::warn("{}", local->gpu_warning);
  } else {
    spdlog::info("{}", local->gpu_source);
  }
  spdlog::info("{}", local->topology_source);
  NodeInfo node = std::move(local->node);
  spdlog::info("node {}: {} GPUs, {} CPUs, {} bytes of memory", node.name, node.gpus.size(),
               node.cpus.toString(), node.memory_bytes);

  // Job tokens: derived from a key made once in the data directory.
  auto job_tokens = auth::JobTokens::loadOrCreate(data_dir + "/job-token.key");
  if (!job_tokens.isOk()) {
    spdlog::error("job tokens: {}", job_tokens.status().toString());
    return 1;
  }
  auto token_key = std::make_shared<const auth::JobTokens>(std::move(*job_tokens));
  auto job_env = std::make_shared<JobEnvironment>(token_key);
  LocalExecutorConfig exec_config;
  exec_config.data_dir = data_dir;
  exec_config.extra_env = [job_env](const AttemptKey& key) { return (*job_env)(key); };
  exec_config.log_max_bytes = config.log_max_bytes;
  exec_config.log_max_files = config.log_max_files;
  exec_config.container.podman = config.podman;
  exec_config.container.runtime = config.container_runtime;
  exec_config.container.network = config.container_network;
  exec_config.use_cgroups = config.cgroups;
  exec_config.node_name = node.name;
  auto executor = newLocalExecutor(exec_config);
  if (!executor.isOk()) {
    spdlog::error("executor: {}", executor.status().toString());
    return 1;
  }

  SystemClock clock;
  JobServiceOptions options;
  options.nodes = {node};
  options.placement = config.scheduler.placement;
  options.policy.queues = config.scheduler.queues;
  options.policy.fair_share_half_life = config.scheduler.fair_share_half_life;
  options.policy.backfill = config.scheduler.backfill;
  options.policy.preemption = config.scheduler.preemption;
  options.policy.borrow_within_cohort = config.scheduler.borrow_within_cohort;
  options.policy.reclaim_respects_priority = config.scheduler.reclaim_respects_priority;
  options.policy.order = config.scheduler.order;
  options.levels.kind = config.scheduler.service_levels;
  options.levels.las_threshold_gpu_ms = config.scheduler.las_threshold;
  options.pick_port = [] {
    auto p = pickFreeTcpPort();
    return p.isOk() ? *p : 29500;
  };
  // The loop's reports go to the API's metrics once the API exists; the
  // recovery pass of start() comes before it and is not counted.
  std::atomic<ControlPlaneMetrics*> pass_metrics{nullptr};
  options.on_pass = [&pass_metrics](const PassReport& report) {
    if (ControlPlaneMetrics* m = pass_metrics.load()) recordPass(*m, report);
  };
  JobService service(**store, **executor, clock, options);
  if (Status st = service.start(); !st.isOk()) {
    spdlog::error("start: {}", st.toString());
    return 1;
  }

  // The projects the configured queues serve exist from the start, so their
  // members can be added at once.
  std::vector<std::string> queue_projects;
  for (const QueueConfig& q : config.scheduler.queues) {
    if (!q.project.empty()) queue_projects.push_back(q.project);
  }
  auto bootstrap =
      bootstrapAdmin(**store, clock.now(), data_dir, config.bootstrap_token_file, queue_projects);
  if (!bootstrap.isOk()) {
    const Status& st = bootstrap.status();
    spdlog::error("{}{}", st.field().empty() ? "" : st.field() + ": ", st.message());
    service.stop();
    return 2;
  }

  std::unique_ptr<GpuMonitor> gpu_monitor = makeGpuMonitor(config, node, service, **store, clock);

  ApiOptions api_options;
  api_options.max_body_bytes = config.max_body_bytes;
  api_options.worker_threads = config.worker_threads;
  api_options.request_timeout = config.api.request_timeout;
  api_options.idle_timeout = config.api.idle_timeout;
  api_options.tls_cert = config.tls_cert;
  api_options.tls_key = config.tls_key;
  api_options.gateway = config.api.gateway;
  api_options.gateway.job_tokens = token_key;
  api_options.web_root =
      config.web_root.empty()
          ? defaultWebRoot()
          : std::filesystem::absolute(config.web_root, ec).lexically_normal().string();
  // The scrape token of GET /metrics, from the environment rather than the
  // config file or the command line, where other users could read it.
  if (const char* token = std::getenv("TRAINYARD_METRICS_TOKEN"); token != nullptr) {
    api_options.metrics_token = token;
  }
  if (gpu_monitor) {
    api_options.extra_metrics = [monitor = gpu_monitor.get()] { return monitor->exposition(); };
    api_options.gpu_live = [monitor = gpu_monitor.get()] { return monitor->liveState(); };
  }
  ApiServer api(**store, service, RunLayout(data_dir), clock, api_options);
  declarePassSeries(api.metrics());
  pass_metrics = &api.metrics();
  auto bound = api.bind(host, port);
  if (!bound.isOk()) {
    const Status& st = bound.status();
    spdlog::error("{}{}", st.field().empty() ? "" : st.field() + ": ", st.message());
    service.stop();
    return st.code() == StatusCode::kInvalidArgument ? 2 : 1;
  }
  std::string url = (api.tls() ? "https://" : "http://") + host + ":" + std::to_string(*bound);
  if (!bootstrap->new_token.empty()) {
    // Printed once, on stdout and not through the log, so that log files
    // and collectors never hold it.
    std::printf(
        "\nCreated the admin user. Its API token (shown once; also in %s, mode 0600):\n\n  "
        "%s\n\nSign in with: trainyard login --server %s --token - < %s\n\n",
        bootstrap->token_path.c_str(), bootstrap->new_token.c_str(), url.c_str(),
        bootstrap->token_path.c_str());
    std::fflush(stdout);
  }
  (void)sys::writeFileAtomic(data_dir + "/server.url", url + "\n");
  job_env->setApiUrl(url);
  MetricIngester ingester(**store, RunLayout(data_dir), clock);
  ingester.start();
  if (gpu_monitor) {
    gpu_monitor->round();  // the first scrape already has GPU series
    gpu_monitor->start();
  }
  spdlog::info("listening on {} (data in {})", url, data_dir);

  // Job notifications (docs/observability.md, "Webhooks") on a thread of
  // their own that only reads and writes the store; the secret comes from
  // the environment, like the metrics token.
  WebhookOptions webhooks = config.webhooks;
  webhooks.api_url = url;
  webhooks.version = api_options.version;
  if (const char* secret = std::getenv("TRAINYARD_WEBHOOK_SECRET"); secret != nullptr) {
    webhooks.secret = secret;
  }
  WebhookNotifier notifier(**store, clock, webhooks);
  notifier.start();

  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    if (sig != 0) spdlog::info("got {}, shutting down (running jobs keep running)", strsignal(sig));
    api.stop();
  });
  api.serve();
  // serve() also returns when the API stops for another reason: make the
  // signal thread return too.
  pthread_kill(signals.native_handle(), SIGTERM);
  signals.join();
  ingester.stop();
  if (gpu_monitor) gpu_monitor->stop();
  service.stop();
  // The executor's monitor thread reports exits to the service: it goes
  // first, while the service can still take them.
  executor->reset();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

Result<LocalNode> describeServerNode(const ServerConfig& config) {
  LocalNode out;
  std::vector<GpuInfo> gpus;
  GpuDiscovery found;
  if (!config.fake_gpus.empty()) {
    Result<std::vector<GpuInfo>> fake = parseFakeGpus(config.fake_gpus, config.node_name);
    if (!fake.isOk()) return fake.status();
    gpus = std::move(fake).value();
    out.gpu_source =
        "using " + std::to_string(gpus.size()) + " fake GPUs (" + config.fake_gpus + ")";
  } else {
    found = discoverNvmlGpus(config.nvml_library);
    gpus = found.gpus;
    if (gpus.empty()) {
      out.gpu_warning = "no GPUs: " + found.note +
                        "; jobs that ask for GPUs will be refused (use --fake-gpus to simulate "
                        "some)";
    } else {
      out.gpu_source = "found " + std::to_string(gpus.size()) + " GPUs through NVML";
      if (!found.note.empty()) out.gpu_source += " (" + found.note + ")";
    }
  }

  // The config wins over NVML: it is how an operator corrects a machine whose
  // NVML reports too little (a VM, an old driver) or wrongly.
  GpuLinks links;
  if (gpus.empty()) {
    out.topology_source = "GPU topology: no GPUs";
  } else if (!config.gpu_topology.empty()) {
    Result<GpuLinks> parsed = parseGpuTopology(config.gpu_topology, "gpu_topology");
    if (!parsed.isOk()) return parsed.status();
    links = std::move(parsed).value();
    if (links.size() != gpus.size()) {
      return Status::invalidArgument(
          "has " + std::to_string(links.size()) + " rows but this node has " +
              std::to_string(gpus.size()) + " GPUs (" +
              (config.fake_gpus.empty() ? "found through NVML" : "--fake-gpus") +
              "); give one row and one column per GPU, in index order",
          "gpu_topology");
    }
    out.topology_source = "GPU topology from gpu_topology: " + formatGpuLinks(links);
  } else if (!config.fake_gpus.empty()) {
    out.topology_source =
        "GPU topology unknown (--fake-gpus without gpu_topology): GPUs are taken by index";
  } else if (found.gpu_links.size() == gpus.size()) {
    links = found.gpu_links;
    out.topology_source = "GPU topology from NVML: " + formatGpuLinks(links);
    if (!found.topology_note.empty()) out.topology_source += " (" + found.topology_note + ")";
  } else {
    out.topology_source =
        "GPU topology unknown (" +
        (found.topology_note.empty() ? std::string("NVML told nothing") : found.topology_note) +
        "): GPUs are taken by index; set gpu_topology to give it";
  }

  out.node = describeLocalNode(config.node_name, std::move(gpus));
  out.node.gpu_links = std::move(links);
  return out;
}

void addServerCommand(CLI::App& app) {
  // Flags are parsed into `flags`; the config file (if any) is read into a
  // fresh config first and then only the flags actually given override it.
  auto flags = std::make_shared<ServerConfig>();
  auto config_file = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand("server", "Run the control plane: API, scheduler, executor");
  std::vector<std::pair<CLI::Option*, std::function<void(ServerConfig&)>>> overrides;
  auto option = [&](const char* name, std::string ServerConfig::*field, const char* help) {
    CLI::Option* o = cmd->add_option(name, (*flags).*field, help)->capture_default_str();
    overrides.push_back({o, [flags, field](ServerConfig& c) { c.*field = (*flags).*field; }});
  };
  option("--listen", &ServerConfig::listen, "HOST:PORT to serve on (port 0: any free port)");
  option("--data-dir", &ServerConfig::data_dir, "Where the store, logs and run files live");
  option("--fake-gpus", &ServerConfig::fake_gpus,
         "Pretend this node has these GPUs, e.g. 4xA100-80GB or 2xH100-80GB,2xL40S-48GB");
  option("--nvml-library", &ServerConfig::nvml_library, "NVML library to load");
  option("--gpu-topology", &ServerConfig::gpu_topology,
         "How the GPUs are linked, in nvidia-smi topo -m cells, rows separated by ';', e.g. "
         "X,NV12;NV12,X (overrides NVML)");
  option("--node-name", &ServerConfig::node_name, "Name of this node");
  option("--container-network", &ServerConfig::container_network,
         "podman network for container jobs (host, none, ...)");
  option("--tls-cert", &ServerConfig::tls_cert,
         "PEM certificate (chain) to serve HTTPS with; needs --tls-key");
  option("--tls-key", &ServerConfig::tls_key, "PEM private key of --tls-cert");
  option("--bootstrap-token-file", &ServerConfig::bootstrap_token_file,
         "File whose first line is the admin's API token (instead of making one at the first "
         "start and writing it to <data-dir>/admin.token)");
  option("--web-root", &ServerConfig::web_root,
         "Directory holding the web UI's build (index.html, assets/); default: ../web/dist from "
         "the directory of this binary");
  cmd->add_option("--config", *config_file, "YAML file with server settings")
      ->check(CLI::ExistingFile);
  cmd->callback([flags, config_file, overrides] {
    ServerConfig config;
    if (!config_file->empty()) {
      if (Status st = loadConfigFile(*config_file, config); !st.isOk()) {
        spdlog::error("{}", st.message());
        std::exit(2);
      }
    }
    for (const auto& [opt, apply] : overrides) {
      if (opt->count() > 0) apply(config);
    }
    std::exit(runServer(config));
  });
}

}  // namespace ty
