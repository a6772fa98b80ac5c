#include "server/pass_metrics.h"

namespace ty {

void recordPass(ControlPlaneMetrics& metrics, const PassReport& report) {
  if (report.scheduling_seconds) metrics.observeSchedulingPass(*report.scheduling_seconds);
  for (const auto& [kind, n] : report.decisions) metrics.countDecisions(kind, n);
  for (const auto& [reason, n] : report.preemptions) metrics.countPreemptions(reason, n);
  for (const auto& [reason, n] : report.failures) metrics.countJobFailures(reason, n);
  for (const auto& [operation, seconds] : report.store_operations) {
    metrics.observeStoreOperation(operation, seconds);
  }
}

void declarePassSeries(ControlPlaneMetrics& metrics) {
  for (const char* kind : {"start", "preempt"}) metrics.countDecisions(kind, 0);
  for (const char* reason : {"priority", "reclaim"}) metrics.countPreemptions(reason, 0);
  for (const std::string& reason : failureReasons()) metrics.countJobFailures(reason, 0);
}

}  // namespace ty
