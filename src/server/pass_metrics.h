// The bridge from JobService's pass reports to the server's Prometheus
// series: JobService knows nothing of Prometheus and ControlPlaneMetrics
// nothing of the service, so the wiring converts one into the other here.
// Stateless; thread-safe as ControlPlaneMetrics' count/observe methods are.
#pragma once

#include "metrics/control_plane_metrics.h"
#include "server/job_service.h"

namespace ty {

// Adds what one report counted and timed to `metrics`.
void recordPass(ControlPlaneMetrics& metrics, const PassReport& report);

// Makes the series of every label value a report can carry exist at zero,
// so that rate() and increase() count from the first scrape on (a counter
// that appears at 1 loses its first increment to them).
void declarePassSeries(ControlPlaneMetrics& metrics);

}  // namespace ty
