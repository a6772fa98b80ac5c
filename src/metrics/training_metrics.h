// TrainingMetrics: the trainyard_job_metric{job,project,user,name} gauge of
// /metrics: the latest value of each training metric (loss, lr, samples/s)
// that running jobs reported. Series of jobs that are no longer running are
// removed at the next update, so label sets do not pile up across jobs.
//
// It reads values only (TrainingMetricSample), never the store.
//
// Ownership: the family lives in the prometheus::Registry given at
// construction, which must outlive this object; the destructor removes it.
// Thread-safety: as GpuMetrics (gpu_metrics.h): one update() at a time.
#pragma once

#include <prometheus/registry.h>

#include <string>
#include <vector>

#include "metrics/gpu_metrics.h"

namespace ty {

// The latest value of one metric of one running job.
struct TrainingMetricSample {
  std::string job;  // the job id, as the API prints it
  std::string project;
  std::string user;
  std::string name;
  double value = 0;
};

class TrainingMetrics {
 public:
  explicit TrainingMetrics(prometheus::Registry& registry);
  ~TrainingMetrics();
  TrainingMetrics(const TrainingMetrics&) = delete;
  TrainingMetrics& operator=(const TrainingMetrics&) = delete;

  // Sets one series per sample and removes every other.
  void update(const std::vector<TrainingMetricSample>& samples);
  std::size_t seriesCount() const { return series_.size(); }

 private:
  prometheus::Registry& registry_;
  GaugeSeries series_;
};

}  // namespace ty
