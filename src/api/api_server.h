// ApiServer: the HTTP front of `trainyard server`: the REST API under
// /api/v1, health probes and the OpenAPI document. Reads go to the Store,
// changes go through the ControlPlane, logs are read from the run files.
// Owns its httplib server and threads; borrows everything else.
// Thread-safe: handlers run on the server's worker threads.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "api/control_plane.h"
#include "api/routes.h"
#include "exec/run_layout.h"
#include "store/store.h"

namespace ty {

struct ApiOptions {
  std::size_t max_body_bytes = 1 << 20;
  int worker_threads = 64;  // follow streams hold a worker each
  int log_poll_ms = 50;     // how often a follow stream looks for new bytes
};

class ApiServer {
 public:
  ApiServer(Store& store, ControlPlane& control, RunLayout layout, ApiOptions options);
  ~ApiServer();

  // Binds host:port (port 0: any free port) and returns the bound port.
  Result<int> bind(const std::string& host, int port);
  // Serves until stop(); call after bind(). Blocks.
  void serve();
  void stop();

  // The documentation of every route, in registration order.
  std::vector<RouteDoc> routeDocs() const;

 private:
  void addRoutes();
  void getJobs(const httplib::Request& req, httplib::Response& res);
  void postJob(const httplib::Request& req, httplib::Response& res);
  void getJob(const httplib::Request& req, httplib::Response& res);
  void cancelJob(const httplib::Request& req, httplib::Response& res);
  void getEvents(const httplib::Request& req, httplib::Response& res);
  void getAttempts(const httplib::Request& req, httplib::Response& res);
  void getLogs(const httplib::Request& req, httplib::Response& res);
  void getNodes(const httplib::Request& req, httplib::Response& res);
  void getQueues(const httplib::Request& req, httplib::Response& res);

  Store& store_;
  ControlPlane& control_;
  RunLayout layout_;
  ApiOptions options_;
  std::vector<Route> routes_;
  std::unique_ptr<httplib::Server> http_;
  // Set by stop(): follow streams end so the worker threads can be joined.
  std::atomic<bool> stopping_{false};
  // Open follow streams; each holds a worker thread, so they are capped
  // below the pool size and the rest of the API keeps answering.
  std::shared_ptr<std::atomic<int>> follows_ = std::make_shared<std::atomic<int>>(0);
};

}  // namespace ty
