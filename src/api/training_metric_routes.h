// The training-metric routes (REST under /api/v1/jobs/{id}/metrics): what a
// job reported about its own training (loss, learning rate, samples/s), as
// series and as a list of names with their latest values. A job reports by
// printing TRAINYARD_METRIC lines (ingested by server/metric_ingester.h) or
// by POSTing with its own job token (auth/job_tokens.h), which the gateway
// accepts on these routes only.
//
// Thread-safe: the handlers share nothing but the (thread-safe) store.
#pragma once

#include <vector>

#include "api/routes.h"
#include "common/clock.h"
#include "metrics/training_metrics.h"
#include "store/store.h"

namespace ty {

struct TrainingMetricContext {
  Store* store = nullptr;
  const Clock* clock = nullptr;
};

// GET and POST /api/v1/jobs/{id}/metrics.
std::vector<Route> trainingMetricRoutes(const TrainingMetricContext& ctx);

// The latest value of every metric of every running job of `active` (the
// store's activeJobs, which the caller has already read), for
// trainyard_job_metric on /metrics: one store read for all of them, in the
// order of `active`, then by name. Fails when the store cannot be read.
Result<std::vector<TrainingMetricSample>> runningJobTrainingMetrics(Store& store,
                                                                    const std::vector<Job>& active);

// {"id","step","value","time"}: one point of a series (step null when the
// job gave none).
Json trainingPointToJson(const TrainingPoint& p);

}  // namespace ty
