// ControlPlane: what the API asks of the running server beyond reading the
// store. Implemented by server/JobService; the API holds a reference and
// never owns it. Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/job.h"
#include "core/node.h"

namespace ty {

// A GPU as the nodes route shows it: which job holds it, if any.
struct GpuView {
  GpuInfo gpu;
  JobId holder;  // value 0: free
};

struct NodeView {
  NodeInfo info;
  std::vector<GpuView> gpus;
  Quantity used_cpus;
  std::int64_t used_memory = 0;
};

// Why a pending job waits, as of the last scheduling pass.
struct WaitInfo {
  int position = 0;
  std::string message;
};

class ControlPlane {
 public:
  virtual ~ControlPlane() = default;
  // Validates, checks feasibility, stores durably, then queues. Returns the
  // stored job (state pending) or why it was refused. With an idempotency
  // key that `user` used before, returns that job (replayed) instead.
  struct Submitted {
    Job job;
    bool replayed = false;
  };
  virtual Result<Submitted> submit(JobSpec spec, const std::string& user,
                                   const std::string& idempotency_key = "") = 0;
  // Cancels a job: at once when pending, by SIGTERM then SIGKILL after the
  // grace period when running. FailedPrecondition when already finished.
  virtual Result<Job> cancel(JobId id, const std::string& user) = 0;
  virtual std::vector<NodeView> nodes() const = 0;
  virtual std::optional<WaitInfo> waitInfo(JobId id) const = 0;
  // True while the reconcile loop is running and the store answers.
  virtual bool ready() const = 0;
};

}  // namespace ty
