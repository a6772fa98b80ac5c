// The discrete-event engine of `trainyard simulate jobs`: replays a job
// trace on a simulated cluster and clock, asking a ReplayPolicy what to do
// at every event (an arrival, a completion, or a time the policy asked to
// be woken at).
//
// Honest replay: a job's true duration lives in SimJob for the engine to
// finish the job; policies get the ReplayState, whose accessors expose only
// what a real scheduler knows (submit time, GPUs, queue, the user's
// estimate, attained service). Estimates are never enforced: a job that
// runs past its estimate is not killed.
//
// Preemption model: a preempted job keeps the work up to its last
// checkpoint (every `checkpoint_interval` of work; 0 means no checkpoints,
// so it starts over), goes back to pending, and pays `restart_overhead` of
// GPU time without progress when it runs again. Not thread-safe; one run
// owns its state.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/time.h"
#include "sim/job_trace.h"

namespace ty {

enum class EstimateMode {
  kNone,    // users give no run time
  kFactor,  // max_runtime = duration x uniform(1, 3), seeded
};
const char* estimateModeName(EstimateMode m);

// How a VC's nominal quota is set.
enum class QuotaMode {
  kShare,  // proportional to its share of the window's GPU-time
  kEqual,  // capacity split evenly
};

struct SimJob {
  JobId id;
  int queue = 0;  // index into ReplayInput::queues
  Timestamp submitted = 0;
  DurationMs duration = 0;  // true work; read by the engine only
  int gpus = 0;
  int replicas = 1;          // gang members, one node each
  int gpus_per_replica = 0;  // replicas * gpus_per_replica == gpus
  DurationMs estimate = 0;   // the user's max_runtime; 0: none given
};

struct QueueInfo {
  std::string name;
  double gpu_time_share = 0;  // of the window's GPU-time
  int quota_gpus = 0;         // nominal quota
};

struct ReplayInput {
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<SimJob> jobs;  // submission order; jobs[i].id == i + 1
  std::vector<QueueInfo> queues;
  EstimateMode estimate = EstimateMode::kNone;
  int skipped_too_large = 0;  // trace jobs that can never fit and were left out
  int capacity() const { return nodes * gpus_per_node; }
};

struct InputOptions {
  int nodes = 64;
  int gpus_per_node = 8;
  EstimateMode estimate = EstimateMode::kNone;
  QuotaMode quota = QuotaMode::kShare;
  std::uint64_t seed = 1;
};

// Turns a trace window into replay jobs: gangs of at most gpus_per_node
// GPUs per replica (the fewest equal replicas), queues in order of first
// appearance, estimates drawn from `seed`. Jobs larger than the cluster
// are left out and counted. InvalidArgument on a non-positive cluster size.
Result<ReplayInput> makeReplayInput(const std::vector<TraceJob>& trace, const InputOptions& opts);

// Where one gang member runs: a node and GPU indices on it.
struct ReplicaSlot {
  int node = 0;
  std::vector<int> gpus;  // empty in a GangStart: the engine takes the lowest free ones
};

enum class JobPhase { kFuture, kPending, kRunning, kDone };

// What the engine tracks about one job as it runs.
struct JobRun {
  JobPhase phase = JobPhase::kFuture;
  DurationMs done = 0;  // work kept (checkpointed)
  Timestamp run_start = 0;
  DurationMs run_overhead = 0;  // restart overhead of the current run
  std::vector<ReplicaSlot> slots;
  DurationMs run_time_before = 0;  // wall time of earlier runs
  Timestamp pending_since = 0;
  Timestamp first_start = -1;
  Timestamp finished = -1;
  int preemptions = 0;
  DurationMs lost_work = 0;  // work redone because of preemptions
  DurationMs overhead = 0;   // restart overhead paid
};

// The replay as a policy sees it. Read-only to policies.
class ReplayState {
 public:
  Timestamp now() const { return now_; }
  const ReplayInput& input() const { return *input_; }
  const SimJob& job(JobId id) const { return input_->jobs[index(id)]; }
  const JobRun& run(JobId id) const { return runs_[index(id)]; }
  // Pending jobs in submission order; running jobs in start order.
  const std::vector<JobId>& pending() const { return pending_; }
  const std::vector<JobId>& running() const { return running_; }
  // GPU-time received so far (earlier runs and the current one), the
  // attained service of Tiresias.
  std::int64_t attainedGpuMs(JobId id) const;
  // Wall time run so far, all runs.
  DurationMs runTime(JobId id) const;
  // When the running job last wrote a checkpoint, as a scheduler would see
  // it (its run's start when none in this run); 0 without checkpoints,
  // when a stop loses everything.
  Timestamp lastCheckpointAt(JobId id) const;
  // owner[node][gpu]: the job holding it, 0 when free.
  const std::vector<std::vector<std::int64_t>>& owners() const { return owners_; }
  std::vector<int> freePerNode() const;

 private:
  friend class ReplayEngine;
  static std::size_t index(JobId id) { return static_cast<std::size_t>(id.value() - 1); }
  const ReplayInput* input_ = nullptr;
  DurationMs checkpoint_interval_ = 0;
  Timestamp now_ = 0;
  std::vector<JobRun> runs_;
  std::vector<JobId> pending_;
  std::vector<JobId> running_;
  std::vector<std::vector<std::int64_t>> owners_;
};

struct GangStart {
  JobId job;
  std::vector<ReplicaSlot> slots;  // exactly job.replicas entries
};

// What a policy decides at one event: victims stop first, then gangs start.
struct ReplayActions {
  std::vector<JobId> preempt;
  std::vector<GangStart> start;
};

// A scheduling policy driven by the engine. Implementations are small
// objects chosen by name (job_policies.h); they may keep state between
// calls of one replay but read time and randomness only from arguments.
class ReplayPolicy {
 public:
  virtual ~ReplayPolicy() = default;
  virtual std::string_view name() const = 0;
  // Called at each event time while jobs are pending.
  virtual ReplayActions decide(const ReplayState& state, Rng& rng) = 0;
  // A time after now() at which the policy wants to decide again even if
  // nothing arrives or ends (a job crossing a priority threshold).
  virtual std::optional<Timestamp> wakeup(const ReplayState& /*state*/) const {
    return std::nullopt;
  }
  // Called after every event once its actions are applied, pending jobs or
  // not: what runs now stays so until the next event (fair-share usage).
  virtual void afterEvent(const ReplayState& /*state*/) {}
};

struct ReplayOptions {
  DurationMs checkpoint_interval = 10 * 60'000;  // 0: no checkpoints
  DurationMs restart_overhead = 30'000;
  std::uint64_t seed = 1;
};

struct JobOutcome {
  JobId id;
  int queue = 0;
  int gpus = 0;
  Timestamp submitted = 0;
  Timestamp first_start = 0;
  Timestamp finished = 0;
  DurationMs duration = 0;
  DurationMs estimate = 0;
  DurationMs run_time = 0;  // duration + lost_work + overhead
  DurationMs lost_work = 0;
  DurationMs overhead = 0;
  int preemptions = 0;
  DurationMs jct() const { return finished - submitted; }
  // All time spent waiting, after preemptions too.
  DurationMs queueing() const { return jct() - run_time; }
};

struct ReplayResult {
  std::string policy;
  std::vector<JobOutcome> jobs;  // by id
  std::int64_t busy_gpu_ms = 0;
  Timestamp first_submit = 0;
  Timestamp last_finish = 0;
  std::int64_t events = 0;  // distinct event times
  std::int64_t preemptions = 0;
  DurationMs makespan() const { return last_finish - first_submit; }
};

// Called after every event once the policy's actions are applied.
using ReplayObserver = std::function<void(const ReplayState&)>;

// Replays every job of `input` to completion. Internal when the policy
// returns an invalid action (a partial gang, a GPU that is taken, a job
// not pending), leaves jobs pending on an idle cluster with nothing left
// to happen, or makes over 1000 events per job (a preemption livelock).
Result<ReplayResult> runReplay(const ReplayInput& input, ReplayPolicy& policy,
                               const ReplayOptions& options, const ReplayObserver& observer = {});

// Best fit on free GPU counts: each replica goes to the node with the
// fewest free GPUs that still hold it, so whole nodes stay whole for big
// gangs. On success returns one node per replica and takes them from
// `free`; otherwise leaves `free` unchanged.
std::optional<std::vector<int>> planGang(std::vector<int>& free, int replicas,
                                         int gpus_per_replica);
// A GangStart on those nodes, GPUs left to the engine.
GangStart gangOn(JobId job, const std::vector<int>& nodes);

}  // namespace ty
