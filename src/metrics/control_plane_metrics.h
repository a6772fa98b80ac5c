// ControlPlaneMetrics: the control-plane series of the server's /metrics
// (queues, quotas, jobs by state, which job holds which GPU, request
// latency), with the names fixed in docs/observability.md.
//
// It reads plain values (a ControlPlaneSnapshot the caller gathers at scrape
// time) and knows nothing of the API, the store or the scheduler, so the
// metrics layer keeps pointing inward.
//
// Scheduler activity (passes, decisions, preemptions, failures, store
// latency) arrives as plain values through the count*/observe* methods,
// which the server feeds from its reconcile loop's reports.
//
// Gauges follow the snapshot: a queue, a (state, project) pair or a GPU
// holder that the latest update no longer has loses its series, so label
// sets of finished jobs and deleted queues do not pile up.
//
// Ownership: the families live in the prometheus::Registry given at
// construction, which must outlive the ControlPlaneMetrics; the destructor
// removes them. Thread-safety: update() from one thread at a time (the
// caller serialises it with collection to serve whole snapshots);
// observeRequest() and the count*/observe* methods from any thread at any
// time, since prometheus-cpp locks each family and counters and histograms
// change atomically.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "metrics/gpu_metrics.h"

namespace ty {

// One queue as the metrics show it. Resource amounts are in the scheduler's
// units: milli-GPU for "gpu" and "gpu:<model>", millicores for "cpu", bytes
// for "memory"; the metrics convert GPUs and CPUs to whole units.
struct QueueMetricsRow {
  struct Resource {
    std::string name;
    std::int64_t nominal = -1;  // -1: no quota, so no nominal series
    std::int64_t used = 0;
  };
  std::string name;
  int pending = 0;
  int running = 0;
  double oldest_wait_seconds = 0;  // 0 when nothing waits
  std::vector<Resource> resources;
};

// A GPU that a job holds (a shared GPU appears once per holder).
struct GpuAllocation {
  std::string node;  // the Hostname label
  int gpu = 0;       // index on the node
  std::string uuid;
  std::string job;  // the job id, as the API prints it
  std::string project;
  std::string user;
};

// A GPU out of scheduling.
struct UnhealthyGpu {
  std::string node;  // the Hostname label
  int gpu = 0;
  std::string uuid;
  std::string reason;  // in plain words
};

struct ControlPlaneSnapshot {
  std::vector<QueueMetricsRow> queues;
  // (state name, project) -> number of jobs; only non-terminal states are
  // meant to be here (terminal totals only grow, and belong in counters).
  std::map<std::pair<std::string, std::string>, int> jobs;
  std::vector<GpuAllocation> gpus;
  std::vector<UnhealthyGpu> unhealthy_gpus;
};

class ControlPlaneMetrics {
 public:
  // Registers the families in `registry`; `version` is trainyard_build_info's
  // label.
  ControlPlaneMetrics(prometheus::Registry& registry, const std::string& version);
  ~ControlPlaneMetrics();
  ControlPlaneMetrics(const ControlPlaneMetrics&) = delete;
  ControlPlaneMetrics& operator=(const ControlPlaneMetrics&) = delete;

  // Sets every gauge from `snapshot` and removes the series it no longer has.
  void update(const ControlPlaneSnapshot& snapshot);

  // One answered request: `route` is the route's OpenAPI path (never the
  // request's own path, whose ids would make a series per job).
  void observeRequest(const std::string& route, const std::string& method, int status,
                      double seconds);

  // One scheduling pass of the reconcile loop took `seconds`.
  void observeSchedulingPass(double seconds);
  // Adds `n` to the counter of that label; n = 0 only makes the series
  // exist, so that rate() and increase() see its first change.
  void countDecisions(const std::string& kind, int n);
  void countPreemptions(const std::string& reason, int n);
  void countJobFailures(const std::string& reason, int n);
  // One store call of `operation` ("commit", "create_jobs", "active_jobs",
  // ...) took `seconds`.
  void observeStoreOperation(const std::string& operation, double seconds);

  // How many series the gauges that follow the snapshot hold now.
  std::size_t seriesCount() const;

 private:
  prometheus::Registry& registry_;
  GaugeSeries pending_;
  GaugeSeries running_;
  GaugeSeries oldest_wait_;
  GaugeSeries quota_nominal_;
  GaugeSeries quota_used_;
  GaugeSeries jobs_;
  GaugeSeries gpu_allocated_;
  GaugeSeries gpu_unhealthy_;
  prometheus::Family<prometheus::Gauge>& build_info_;
  prometheus::Family<prometheus::Histogram>& request_duration_;
  prometheus::Family<prometheus::Histogram>& pass_duration_;
  prometheus::Histogram& pass_histogram_;  // owned by pass_duration_
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Counter>& preemptions_;
  prometheus::Family<prometheus::Counter>& failures_;
  prometheus::Family<prometheus::Histogram>& store_duration_;
  // The request histograms by "route method status": Family::Add builds a
  // histogram before it looks for an existing one, too much for every request.
  std::mutex histograms_mu_;
  std::map<std::string, prometheus::Histogram*> histograms_;  // owned by the family
  // The store histograms by operation, for the same reason.
  std::map<std::string, prometheus::Histogram*> store_histograms_;  // guarded by histograms_mu_
};

}  // namespace ty
