#include "metrics/training_metrics.h"

#include "metrics/families.h"

namespace ty {

TrainingMetrics::TrainingMetrics(prometheus::Registry& registry)
    : registry_(registry),
      series_(gaugeFamily(registry, "trainyard_job_metric",
                          "The latest value of a training metric (loss, learning rate, "
                          "samples/s) a running job reported; name is the job's metric name.")) {}

TrainingMetrics::~TrainingMetrics() { registry_.Remove(series_.family()); }

void TrainingMetrics::update(const std::vector<TrainingMetricSample>& samples) {
  for (const TrainingMetricSample& s : samples) {
    series_.set({{"job", s.job}, {"project", s.project}, {"user", s.user}, {"name", s.name}},
                s.value);
  }
  series_.sweep();
}

}  // namespace ty
