// ServerConfig: everything `trainyard server` can be told, from flags and an
// optional YAML file (flags win). A plain value.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/gateway.h"
#include "common/status.h"
#include "common/time.h"
#include "core/gpu_diagnosis.h"
#include "core/queue.h"
#include "core/schedule.h"
#include "core/service_levels.h"
#include "server/webhook_notifier.h"

namespace ty {

// How the scheduler decides: the `scheduler:` section of the config file.
struct SchedulerSettings {
  std::string placement = "trainyard";  // a name from placementPolicyNames()
  std::vector<QueueConfig> queues;      // none: one unlimited queue for everyone
  DurationMs fair_share_half_life = 7LL * 24 * 3600 * 1000;
  bool backfill = true;
  bool preemption = true;
  // Stop lower-priority borrowers of the cohort; reclaim only from equal or
  // lower priority. Defaults from the core (both on).
  bool borrow_within_cohort = PolicyConfig{}.borrow_within_cohort;
  bool reclaim_respects_priority = PolicyConfig{}.reclaim_respects_priority;
  // Priorities refined by remaining estimate or attained service
  // (core/service_levels.h); `las_threshold` is GPU-time for least-attained.
  ServiceLevels service_levels = ServiceLevelConfig{}.kind;
  DurationMs las_threshold = ServiceLevelConfig{}.las_threshold_gpu_ms;
  JobOrder order = JobOrder::kFairShare;
};

// The `api:` section: limits and sessions of the HTTP gateway.
struct ApiSettings {
  GatewayOptions gateway;  // rate limits, lockout, session lifetime
  DurationMs request_timeout = 30'000;
  DurationMs idle_timeout = 5'000;
};

// The `gpu_monitor:` section: how often the server samples its GPUs and
// what the diagnosis (core/gpu_diagnosis.h) calls idle, input-bound or a
// ghost.
struct GpuMonitorSettings {
  bool enabled = true;
  DurationMs sample_interval = 5'000;
  DiagnosisConfig diagnosis;
};

struct ServerConfig {
  std::string listen = "127.0.0.1:8080";
  std::string data_dir = "./var";
  std::string fake_gpus;  // "4xA100-80GB"; empty: discover with NVML
  std::string nvml_library = "libnvidia-ml.so.1";
  // How the GPUs are linked, in `nvidia-smi topo -m` cells, rows joined by
  // ';' ("X,NV12;NV12,X"; gpu/topology.h). Empty: ask NVML (none with
  // fake_gpus). Checked when read; its size against the GPUs at start.
  std::string gpu_topology;
  std::string node_name = "local";
  std::size_t max_body_bytes = 1 << 20;
  int worker_threads = 64;
  std::int64_t log_max_bytes = 64LL << 20;
  int log_max_files = 3;
  std::string podman = "podman";
  std::string container_runtime = "runc";
  std::string container_network = "host";
  bool cgroups = true;
  // HTTPS: PEM certificate (chain) and key; both or neither.
  std::string tls_cert;
  std::string tls_key;
  // A file whose first line is the bootstrap admin's API token; empty: one
  // is made at the first start and written to <data_dir>/admin.token.
  std::string bootstrap_token_file;
  // The web UI's build (index.html and assets/); empty: defaultWebRoot().
  std::string web_root;
  ApiSettings api;
  SchedulerSettings scheduler;
  GpuMonitorSettings gpu_monitor;
  // The `webhooks:` section: retries and timeouts of job notifications
  // (server/webhook_notifier.h). The signing secret comes from the
  // environment (TRAINYARD_WEBHOOK_SECRET), never from this file.
  WebhookOptions webhooks;
};

// Reads a parsed config document into `config`: keys present replace the
// defaults. Unknown keys and wrong types are InvalidArgument naming the key.
Status readConfig(const nlohmann::json& doc, ServerConfig& config);

// Reads a YAML config file into `config`. Unknown keys are errors that name
// the key; so are values of the wrong type.
Status loadConfigFile(const std::string& path, ServerConfig& config);

// Where the web UI's build is looked for without --web-root:
// <directory of this binary>/../web/dist, as an absolute path. A binary
// built in a checkout (build/trainyard, build-test/trainyard) so finds the
// checkout's web/dist. Not the data directory: a build is not data.
std::string defaultWebRoot();

// Splits "HOST:PORT" ("127.0.0.1:8080", "[::1]:0"). InvalidArgument naming
// --listen otherwise.
Status parseListen(const std::string& listen, std::string& host, int& port);

}  // namespace ty
