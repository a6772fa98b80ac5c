// Helpers of the training-metric part of the Store port shared by every
// implementation.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "codec/training_metric_codec.h"
#include "store/store.h"

namespace ty {

std::vector<TrainingPoint> downsampleTrainingPoints(std::vector<TrainingPoint> points,
                                                    int max_points) {
  if (max_points < 2) {
    std::fprintf(stderr, "downsampleTrainingPoints: max_points %d < 2\n", max_points);
    std::abort();
  }
  const std::size_t n = points.size();
  const auto keep = static_cast<std::size_t>(max_points);
  if (n <= keep) return points;
  // Index i of the kept points is round(i * (n-1) / (keep-1)): 0 and n-1
  // are always kept and the steps between differ by at most one, so the
  // chart's shape is sampled evenly. Strictly increasing since n > keep.
  std::vector<TrainingPoint> out;
  out.reserve(keep);
  for (std::size_t i = 0; i < keep; ++i) {
    std::size_t at = (i * (n - 1) * 2 + (keep - 1)) / ((keep - 1) * 2);
    out.push_back(std::move(points[at]));
  }
  return out;
}

Status validateTrainingSeriesQuery(const TrainingSeriesQuery& query) {
  if (query.limit < 1 || query.limit > 100'000) {
    return Status::invalidArgument("must be 1-100000", "limit");
  }
  if (query.max_points != 0 && (query.max_points < 2 || query.max_points > 100'000)) {
    return Status::invalidArgument("must be 2-100000", "max_points");
  }
  if (query.after_id < 0) return Status::invalidArgument("must not be negative", "after");
  return Status::ok();
}

Status validateTrainingPoint(const TrainingPoint& point) {
  if (!validMetricName(point.name)) {
    return Status::invalidArgument("is not a metric name: \"" + point.name.substr(0, 40) + "\"",
                                   "name");
  }
  if (!std::isfinite(point.value)) return Status::invalidArgument("must be finite", "value");
  if (point.step && *point.step < 0) return Status::invalidArgument("must not be negative", "step");
  if (point.source.empty() || point.source.size() > 256) {
    return Status::invalidArgument("must be 1-256 characters", "source");
  }
  return Status::ok();
}

}  // namespace ty
