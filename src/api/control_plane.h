// ControlPlane: what the API asks of the running server beyond reading the
// store. Implemented by server/JobService; the API holds a reference and
// never owns it. Thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/job.h"
#include "core/node.h"
#include "core/queue.h"

namespace ty {

// A GPU as the nodes route shows it: which jobs hold it, if any.
struct GpuView {
  GpuInfo gpu;                   // gpu.healthy: whether new jobs may be placed on it
  std::vector<JobId> holders;    // one for a whole GPU; several when shared
  int used_milli = 0;            // 1000: fully used
  std::string unhealthy_reason;  // why it is out of scheduling; "" when healthy
};

// Whether a GPU takes new jobs, and since when. Health may be set from
// outside the scheduler (a GPU monitor's diagnosis) and lives in memory only.
struct GpuHealthView {
  std::string node;
  int gpu = 0;  // index on the node
  std::string uuid;
  bool healthy = true;
  std::string reason;   // "" when healthy
  Timestamp since = 0;  // when it last changed; 0: as discovered at start
};

// What the GPU monitor sees of one GPU now, for the nodes route. Unset
// readings are unknown (no NVML, or the read failed).
struct GpuLiveView {
  std::optional<double> util_percent;  // SM utilisation of the latest sample, 0-100
  std::optional<std::int64_t> memory_used_bytes;
  // Recent utilisation samples (time, percent), oldest first; at most
  // kGpuHistorySamples.
  std::vector<std::pair<Timestamp, double>> history;
  // When the jobs holding it started an idle spell (the idle-allocation
  // diagnosis, core/gpu_diagnosis.h); 0: not idle, or not held.
  Timestamp idle_since = 0;
  // Processes on it that no running job owns, seen two rounds in a row.
  std::vector<std::int64_t> ghost_pids;
};
inline constexpr std::size_t kGpuHistorySamples = 120;
// Live GPU state by (node, GPU index).
using GpuLiveKey = std::pair<std::string, int>;
using GpuLiveState = std::map<GpuLiveKey, GpuLiveView>;

struct NodeView {
  NodeInfo info;
  std::vector<GpuView> gpus;
  Quantity used_cpus;
  std::int64_t used_memory = 0;
};

// Why a pending job waits, as of the last scheduling pass.
struct WaitInfo {
  std::string queue;
  int position = 0;     // 1-based, within its queue
  std::string message;  // in plain words
  Timestamp eta = 0;    // estimated start from running jobs' limits; 0: unknown
};

// A queue, its quota and what it uses now. Amounts are in the resource's
// unit: milli-GPU for "gpu" and "gpu:<model>", millicores for "cpu",
// bytes for "memory"; a limit of -1 means none.
struct QueueView {
  struct Resource {
    std::string name;
    std::int64_t nominal = -1;
    std::int64_t borrowing_limit = -1;
    std::int64_t lending_limit = -1;
    std::int64_t used = 0;
    // Above nominal, taken from the cohort (QuotaLedger::borrowed).
    std::int64_t borrowed = 0;
    // Of this queue's unused nominal, what other queues of its cohort use
    // now (QuotaLedger::lent).
    std::int64_t lent = 0;
  };
  std::string name;
  std::string cohort;
  double weight = 1;
  std::vector<std::string> projects;
  std::vector<Resource> resources;
  double usage_gpu_hours = 0;  // decayed usage that orders fair share
  int pending = 0;
  int running = 0;
};

// What a queue change did, for the answer to the admin who made it.
struct QueueChange {
  QueueConfig queue;     // as stored and now in force
  bool created = false;  // false: an existing queue was replaced
  // Consequences worth knowing, in plain words; empty when there are none
  // ("nlp uses 12 GPUs, above the new nominal 8: ...").
  std::string note;
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
  virtual std::vector<QueueView> queues() const = 0;
  // The queues in force, as configured, in their order (which decides a
  // project's queue: jobQueue in core/queue.h).
  virtual std::vector<QueueConfig> queueConfigs() const = 0;
  // Creates the queue named `queue.name`, or replaces its whole config
  // (queues and quotas are changed only by global admins; the API checks
  // that). Validated first (InvalidArgument naming the field), stored
  // durably, then in force from the next scheduling pass. A quota below
  // what the queue uses now is allowed: nothing is stopped for it, and the
  // note says what follows.
  virtual Result<QueueChange> putQueue(QueueConfig queue) = 0;
  // Deletes a queue: NotFound when there is none of this name,
  // FailedPrecondition (saying how many) while jobs of it are pending or
  // running.
  virtual Status deleteQueue(const std::string& name) = 0;
  // True while the reconcile loop is running and the store answers.
  virtual bool ready() const = 0;
  // Every GPU of every node with its health.
  virtual std::vector<GpuHealthView> gpuHealth() const = 0;
};

}  // namespace ty
