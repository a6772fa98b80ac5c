#include "metrics/control_plane_metrics.h"

#include <string>

namespace ty {
namespace {

prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& registry, const char* name,
                                             const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}

// The scheduler counts GPUs and CPUs in thousandths; dashboards want units.
double inUnits(const std::string& resource, std::int64_t amount) {
  bool milli = resource == "cpu" || resource == "gpu" || resource.rfind("gpu:", 0) == 0;
  return milli ? static_cast<double>(amount) / 1000.0 : static_cast<double>(amount);
}

// From 1 ms (a health probe) to 10 s (a large listing on a slow disk).
const prometheus::Histogram::BucketBoundaries kRequestBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10};

}  // namespace

ControlPlaneMetrics::ControlPlaneMetrics(prometheus::Registry& registry, const std::string& version)
    : registry_(registry),
      pending_(gauge(registry, "trainyard_queue_pending_jobs", "Jobs waiting in the queue.")),
      running_(gauge(registry, "trainyard_queue_running_jobs",
                     "Jobs of the queue that are scheduled or running.")),
      oldest_wait_(gauge(registry, "trainyard_queue_oldest_wait_seconds",
                         "How long the queue's oldest pending job has waited (0 when none "
                         "waits).")),
      quota_nominal_(gauge(registry, "trainyard_queue_quota_nominal",
                           "The queue's nominal quota (GPUs and CPUs in units, memory in "
                           "bytes); no series for a resource without a quota.")),
      quota_used_(gauge(registry, "trainyard_queue_quota_used",
                        "What the queue's running jobs use (GPUs and CPUs in units, memory in "
                        "bytes).")),
      jobs_(gauge(registry, "trainyard_jobs", "Jobs in each non-terminal state, by project.")),
      gpu_allocated_(gauge(registry, "trainyard_gpu_allocated",
                           "1 for each GPU a job holds, with the job, project and user.")),
      build_info_(gauge(registry, "trainyard_build_info", "The server's version; always 1.")),
      request_duration_(prometheus::BuildHistogram()
                            .Name("trainyard_http_request_duration_seconds")
                            .Help("Time to answer an API request, by route (its OpenAPI "
                                  "path), method and status.")
                            .Register(registry)) {
  build_info_.Add({{"version", version}}).Set(1);
}

ControlPlaneMetrics::~ControlPlaneMetrics() {
  for (GaugeSeries* s : {&pending_, &running_, &oldest_wait_, &quota_nominal_, &quota_used_, &jobs_,
                         &gpu_allocated_}) {
    registry_.Remove(s->family());
  }
  registry_.Remove(build_info_);
  registry_.Remove(request_duration_);
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
  for (GaugeSeries* s : {&pending_, &running_, &oldest_wait_, &quota_nominal_, &quota_used_, &jobs_,
                         &gpu_allocated_}) {
    s->sweep();
  }
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
         quota_used_.size() + jobs_.size() + gpu_allocated_.size();
}

}  // namespace ty
