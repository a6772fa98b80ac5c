#include "metrics/control_plane_metrics.h"

#include <string>

#include "metrics/families.h"

namespace ty {
namespace {

// The scheduler counts GPUs and CPUs in thousandths; dashboards want units.
double inUnits(const std::string& resource, std::int64_t amount) {
  bool milli = resource == "cpu" || resource == "gpu" || resource.rfind("gpu:", 0) == 0;
  return milli ? static_cast<double>(amount) / 1000.0 : static_cast<double>(amount);
}

// From 1 ms (a health probe) to 10 s (a large listing on a slow disk).
const prometheus::Histogram::BucketBoundaries kRequestBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

// A pass over a few jobs takes tens of microseconds; one over tens of
// thousands of pending jobs on a large cluster, up to seconds.
const prometheus::Histogram::BucketBoundaries kPassBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5};

// A SQLite commit on a local SSD takes well under a millisecond; an fsync
// on a busy or network disk, up to seconds.
const prometheus::Histogram::BucketBoundaries kStoreBuckets = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};

}  // namespace

ControlPlaneMetrics::ControlPlaneMetrics(prometheus::Registry& registry, const std::string& version)
    : registry_(registry),
      pending_(gaugeFamily(registry, "trainyard_queue_pending_jobs", "Jobs waiting in the queue.")),
      running_(gaugeFamily(registry, "trainyard_queue_running_jobs",
                           "Jobs of the queue that are scheduled or running.")),
      oldest_wait_(gaugeFamily(registry, "trainyard_queue_oldest_wait_seconds",
                               "How long the queue's oldest pending job has waited (0 when none "
                               "waits).")),
      quota_nominal_(gaugeFamily(registry, "trainyard_queue_quota_nominal",
                                 "The queue's nominal quota (GPUs and CPUs in units, memory in "
                                 "bytes); no series for a resource without a quota.")),
      quota_used_(
          gaugeFamily(registry, "trainyard_queue_quota_used",
                      "What the queue's running jobs use (GPUs and CPUs in units, memory in "
                      "bytes).")),
      jobs_(
          gaugeFamily(registry, "trainyard_jobs", "Jobs in each non-terminal state, by project.")),
      gpu_allocated_(gaugeFamily(registry, "trainyard_gpu_allocated",
                                 "1 for each GPU a job holds, with the job, project and user.")),
      gpu_unhealthy_(
          gaugeFamily(registry, "trainyard_gpu_unhealthy",
                      "1 for each GPU the scheduler keeps out of scheduling, with why.")),
      build_info_(gaugeFamily(registry, "trainyard_build_info", "The server's version; always 1.")),
      request_duration_(histogramFamily(registry, "trainyard_http_request_duration_seconds",
                                        "Time to answer an API request, by route (its OpenAPI "
                                        "path), method and status.")),
      pass_duration_(histogramFamily(registry, "trainyard_scheduling_pass_duration_seconds",
                                     "Time of one scheduling pass of the reconcile loop (snapshot, "
                                     "decision, applying it), store writes excluded.")),
      pass_histogram_(pass_duration_.Add({}, kPassBuckets)),
      decisions_(
          counterFamily(registry, "trainyard_scheduling_decisions_total",
                        "Scheduling decisions taken, by kind: start (a job placed) or preempt "
                        "(a running job chosen to stop).")),
      preemptions_(counterFamily(registry, "trainyard_preemptions_total",
                                 "Running jobs stopped for a waiting one, by reason: priority or "
                                 "reclaim.")),
      failures_(counterFamily(registry, "trainyard_job_failures_total",
                              "Jobs that ended failed, by reason: exit_code, signal, lost, launch, "
                              "max_runtime.")),
      store_duration_(histogramFamily(registry, "trainyard_store_operation_duration_seconds",
                                      "Time of a store call, by operation (commit, create_jobs, "
                                      "active_jobs, list_jobs).")) {
  build_info_.Add({{"version", version}}).Set(1);
}

ControlPlaneMetrics::~ControlPlaneMetrics() {
  for (GaugeSeries* s : {&pending_, &running_, &oldest_wait_, &quota_nominal_, &quota_used_, &jobs_,
                         &gpu_allocated_, &gpu_unhealthy_}) {
    registry_.Remove(s->family());
  }
  registry_.Remove(build_info_);
  registry_.Remove(request_duration_);
  registry_.Remove(pass_duration_);
  registry_.Remove(decisions_);
  registry_.Remove(preemptions_);
  registry_.Remove(failures_);
  registry_.Remove(store_duration_);
}

void ControlPlaneMetrics::update(const ControlPlaneSnapshot& snapshot) {
  for (const QueueMetricsRow& q : snapshot.queues) {
    const prometheus::Labels queue = {{"queue", q.name}};
    pending_.set(queue, q.pending);
    running_.set(queue, q.running);
    oldest_wait_.set(queue, q.oldest_wait_seconds);
    for (const QueueMetricsRow::Resource& r : q.resources) {
      const prometheus::Labels labels = {{"queue", q.name}, {"resource", r.name}};
      if (r.nominal >= 0) quota_nominal_.set(labels, inUnits(r.name, r.nominal));
      quota_used_.set(labels, inUnits(r.name, r.used));
    }
  }
  for (const auto& [key, count] : snapshot.jobs) {
    jobs_.set({{"state", key.first}, {"project", key.second}}, count);
  }
  for (const GpuAllocation& g : snapshot.gpus) {
    gpu_allocated_.set({{"gpu", std::to_string(g.gpu)},
                        {"UUID", g.uuid},
                        {"Hostname", g.node},
                        {"job", g.job},
                        {"project", g.project},
                        {"user", g.user}},
                       1);
  }
  for (const UnhealthyGpu& g : snapshot.unhealthy_gpus) {
    gpu_unhealthy_.set({{"gpu", std::to_string(g.gpu)},
                        {"UUID", g.uuid},
                        {"Hostname", g.node},
                        {"reason", g.reason}},
                       1);
  }
  for (GaugeSeries* s : {&pending_, &running_, &oldest_wait_, &quota_nominal_, &quota_used_, &jobs_,
                         &gpu_allocated_, &gpu_unhealthy_}) {
    s->sweep();
  }
}

void ControlPlaneMetrics::observeSchedulingPass(double seconds) {
  pass_histogram_.Observe(seconds);
}

// Family::Add finds an existing series by its labels (building nothing for
// a counter), so counters need no cache of their own.
void ControlPlaneMetrics::countDecisions(const std::string& kind, int n) {
  decisions_.Add({{"kind", kind}}).Increment(static_cast<double>(n));
}

void ControlPlaneMetrics::countPreemptions(const std::string& reason, int n) {
  preemptions_.Add({{"reason", reason}}).Increment(static_cast<double>(n));
}

void ControlPlaneMetrics::countJobFailures(const std::string& reason, int n) {
  failures_.Add({{"reason", reason}}).Increment(static_cast<double>(n));
}

void ControlPlaneMetrics::observeStoreOperation(const std::string& operation, double seconds) {
  prometheus::Histogram* h = nullptr;
  {
    std::lock_guard lock(histograms_mu_);
    auto [it, inserted] = store_histograms_.try_emplace(operation);
    if (inserted) it->second = &store_duration_.Add({{"operation", operation}}, kStoreBuckets);
    h = it->second;
  }
  h->Observe(seconds);
}

void ControlPlaneMetrics::observeRequest(const std::string& route, const std::string& method,
                                         int status, double seconds) {
  std::string status_text = std::to_string(status);
  prometheus::Histogram* histogram = nullptr;
  {
    std::lock_guard lock(histograms_mu_);
    auto [it, inserted] = histograms_.try_emplace(route + " " + method + " " + status_text);
    if (inserted) {
      it->second = &request_duration_.Add(
          {{"route", route}, {"method", method}, {"status", status_text}}, kRequestBuckets);
    }
    histogram = it->second;
  }
  histogram->Observe(seconds);
}

std::size_t ControlPlaneMetrics::seriesCount() const {
  return pending_.size() + running_.size() + oldest_wait_.size() + quota_nominal_.size() +
         quota_used_.size() + jobs_.size() + gpu_allocated_.size() + gpu_unhealthy_.size();
}

}  // namespace ty
