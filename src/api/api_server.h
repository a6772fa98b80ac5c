// ApiServer: the HTTP front of `trainyard server`: the REST API under
// /api/v1, health probes, the OpenAPI document, the control-plane metrics
// (GET /metrics, Prometheus text format) and the web UI (web_ui.h). Reads go
// to the Store, changes go through the ControlPlane, logs are read from the
// run files.
// Owns its httplib server and threads; borrows everything else.
// Thread-safe: handlers run on the server's worker threads.
#pragma once

#include <prometheus/registry.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "api/control_plane.h"
#include "api/gateway.h"
#include "api/routes.h"
#include "api/web_ui.h"
#include "common/clock.h"
#include "exec/run_layout.h"
#include "metrics/control_plane_metrics.h"
#include "metrics/training_metrics.h"
#include "store/store.h"

namespace ty {

struct ApiOptions {
  std::size_t max_body_bytes = 1 << 20;
  int worker_threads = 64;  // follow streams hold a worker each
  int log_poll_ms = 50;     // how often a follow stream looks for new bytes
  // A client that sends or reads nothing for this long is cut off, so a
  // slow client cannot hold a worker.
  DurationMs request_timeout = 30'000;
  // Keep-alive connections idle this long are closed.
  DurationMs idle_timeout = 5'000;
  // PEM files; both set: HTTPS only.
  std::string tls_cert;
  std::string tls_key;
  GatewayOptions gateway;
  // GET /metrics is open like the health probes, so that Prometheus needs no
  // user; set, it needs "Authorization: Bearer <metrics_token>" (401
  // otherwise), for servers whose job, project and user names are private.
  std::string metrics_token;
  // More series for GET /metrics, already in the text format, served after
  // the control plane's (the server's GPU monitor); unset: none. Called on
  // the request's thread.
  std::function<std::string()> extra_metrics;
  // Live state of the GPUs (utilisation, its recent history, idle and
  // ghost diagnoses) for GET /api/v1/nodes, from the server's GPU monitor;
  // unset, or a GPU missing from the answer: those fields are null or
  // empty. Called on the request's thread.
  std::function<GpuLiveState()> gpu_live;
  // trainyard_build_info's version label; the same as `trainyard --version`.
  std::string version = "0.1.0";
  // The web UI's build (index.html and assets/, as `vite build` writes
  // web/dist); empty: none, and its pages say how to build one.
  std::string web_root;
};

class ApiServer {
 public:
  ApiServer(Store& store, ControlPlane& control, RunLayout layout, const Clock& clock,
            ApiOptions options);
  ~ApiServer();

  // Binds host:port (port 0: any free port) and returns the bound port.
  // Fails without binding when a route declares no access or the TLS files
  // cannot be used.
  Result<int> bind(const std::string& host, int port);
  // Serves until stop(); call after bind(). Blocks.
  void serve();
  void stop();

  // Every route with its documentation and access declaration, in
  // registration order.
  const std::vector<Route>& routes() const { return routes_; }
  bool tls() const { return !options_.tls_cert.empty(); }
  // The series GET /metrics serves, for the server to count scheduler
  // activity into; lives as long as the ApiServer.
  ControlPlaneMetrics& metrics() { return metrics_; }

 private:
  void addRoutes();
  void setUpHttp();
  void getJobs(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void getJobCounts(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void postJob(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void getJob(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void cancelJob(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void getEvents(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void getAttempts(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void getLogs(const httplib::Request& req, httplib::Response& res, Caller& caller);
  // GET .../logs?cursor=: the bytes since a cursor, without holding a worker.
  void getLogsSince(const httplib::Request& req, httplib::Response& res, const Job& job,
                    int replica, bool pinned, int attempt, std::int64_t tail);
  void getNodes(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void getQueues(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void putQueue(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void deleteQueue(const httplib::Request& req, httplib::Response& res, Caller& caller);
  void getMetrics(const httplib::Request& req, httplib::Response& res, Caller& caller);
  // The control plane as the metrics show it, gathered now from the
  // ControlPlane and `active` (the store's activeJobs, read by the caller).
  Result<ControlPlaneSnapshot> metricsSnapshot(const std::vector<Job>& active);
  // The job at the route's {id} if the caller holds `permission` on it;
  // NotFound when it is missing or in a project the caller cannot read.
  Result<Job> visibleJob(const httplib::Request& req, Caller& caller, auth::Permission permission);

  Store& store_;
  ControlPlane& control_;
  RunLayout layout_;
  const Clock& clock_;
  ApiOptions options_;
  // Before gateway_ and http_, so that they outlive every request that
  // observes into them.
  prometheus::Registry registry_;
  ControlPlaneMetrics metrics_;
  TrainingMetrics training_metrics_{registry_};
  std::mutex scrape_mu_;  // one scrape at a time, so each serves a whole update
  Gateway gateway_;
  WebUi web_ui_{options_.web_root};  // its routes borrow it
  std::vector<Route> routes_;
  Status setup_;  // why the server cannot start; Ok normally
  std::unique_ptr<httplib::Server> http_;
  // Set by stop(): follow streams end so the worker threads can be joined.
  std::atomic<bool> stopping_{false};
  // Open follow streams; each holds a worker thread, so they are capped
  // below the pool size and the rest of the API keeps answering.
  std::shared_ptr<std::atomic<int>> follows_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace ty
