// JobService: the control plane's reconcile loop.
//
// One thread owns every job's state after submission. Each pass it takes
// what arrived (new jobs, cancels, replica exits, timers), asks the pure
// core schedule() what to place, commits all resulting transitions to the
// store in one batch, and only then acts on them through the Executor
// (launch, signal, release). A crash at any point is repaired at start by
// recover(): pending jobs stay queued, attempts that were placed or running
// are launched again, which the executor turns into adoption of what still
// runs or a report of how it ended.
//
// Queues and quotas: read from the store at start (the config file's queues,
// in options.policy.queues, seed an empty store and are otherwise only
// compared with it), and replaced at run time by putQueue/deleteQueue, which
// write the store first and then swap the queues in force, so that the next
// pass schedules with them.
//
// GPU health: setGpuHealth takes a GPU out of scheduling (or back) from
// outside the scheduler, e.g. on a monitor's diagnosis. It is kept in memory
// only: a restart starts from what discovery reports, and whoever found the
// fault reports it again. recordEvents appends other components' events
// about jobs through the loop's next commit, so they get store sequence
// numbers in order with the loop's own.
//
// Metrics: the service knows nothing of Prometheus; it hands a PassReport to
// options.on_pass and the caller turns it into series.
//
// Thread-safe: the ControlPlane methods may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <thread>
#include <vector>

#include "api/control_plane.h"
#include "common/clock.h"
#include "common/rng.h"
#include "core/schedule.h"
#include "core/service_levels.h"
#include "exec/executor.h"
#include "server/submit_batcher.h"
#include "store/store.h"

namespace ty {

// What one loop pass did, for metrics. Counts cover only what was committed:
// a pass whose store write failed reports its write time and nothing else.
struct PassReport {
  // Wall time of the scheduling step (snapshot, schedule(), applying its
  // Decision), measured with a steady clock; absent when the pass did not
  // call schedule() (nothing pending, or only exits, timers or cancels).
  std::optional<double> scheduling_seconds;
  // Decisions the scheduling step took, by kind: "start" (a job placed) and
  // "preempt" (a victim chosen). The core does not tell backfilled starts
  // apart from others, so both are "start".
  std::map<std::string, int> decisions;
  // Preemptions begun, by reason: "priority" (a higher-priority job of the
  // same queue, or a precedence across a cohort) or "reclaim" (quota taken
  // back by a queue within its nominal).
  std::map<std::string, int> preemptions;
  // Jobs that ended failed, by reason (failureReasons() lists them).
  std::map<std::string, int> failures;
  // Store writes, as (operation, seconds): "commit" for each batch the loop
  // applies, "create_jobs" for a submission's write (reported from the
  // submitting thread, alone in its report; it includes the wait for the
  // group commit it joins).
  std::vector<std::pair<std::string, double>> store_operations;
};

// The fixed set of PassReport::failures reasons, so that the metric's label
// set stays small: "exit_code" (a replica exited non-zero), "signal" (killed
// by a signal it did not get from us, e.g. the OOM killer), "lost" (it
// ended while no one watched), "launch" (could not be started), "max_runtime"
// (killed at its time limit).
const std::vector<std::string>& failureReasons();

struct JobServiceOptions {
  std::vector<NodeInfo> nodes;
  // Queues, fair share, backfill and preemption; `policy.placement` is
  // ignored: the service makes its own from `placement`. `policy.queues`
  // are the config file's: they seed a store that holds no queues; once it
  // holds some, the stored ones are used (see JobService).
  PolicyConfig policy;
  // Levels folded into priorities before each pass (core/service_levels.h).
  ServiceLevelConfig levels;
  std::string placement = "trainyard";  // a name from placementPolicyNames()
  std::function<int()> pick_port;       // a free TCP port for MASTER_PORT
  std::uint64_t seed = 1;
  // Called after each loop pass (on the loop thread) and after each
  // submission's store write (on the submitting thread): must be
  // thread-safe and quick. Empty: nothing is reported.
  std::function<void(const PassReport&)> on_pass;
};

class JobService final : public ControlPlane {
 public:
  // `store`, `executor` and `clock` must outlive the service.
  JobService(Store& store, Executor& executor, const Clock& clock, JobServiceOptions options);
  ~JobService() override;

  // Recovers state from the store and starts the loop thread.
  Status start();
  // Stops the loop (running jobs keep running; a restart adopts them).
  void stop();
  // Runs a pass now (timers are re-read from the clock). For clocks that
  // move by hand; a real clock needs no help.
  void wake();

  Result<Submitted> submit(JobSpec spec, const std::string& user,
                           const std::string& idempotency_key = "") override;
  Result<Job> cancel(JobId id, const std::string& user) override;
  std::vector<NodeView> nodes() const override;
  std::optional<WaitInfo> waitInfo(JobId id) const override;
  std::vector<QueueView> queues() const override;
  std::vector<QueueConfig> queueConfigs() const override;
  Result<QueueChange> putQueue(QueueConfig queue) override;
  Status deleteQueue(const std::string& name) override;
  bool ready() const override;
  std::vector<GpuHealthView> gpuHealth() const override;

  // Marks GPU `gpu_index` of `node` healthy or not and has the loop run a
  // pass. An unhealthy GPU gets no new jobs; jobs already on it keep running
  // (and get a warning event). `reason` says why, in plain words ("Xid 79:
  // fallen off the bus"); ignored when healthy. NotFound for an unknown node
  // or GPU. In memory only: see the header comment.
  Status setGpuHealth(const std::string& node, int gpu_index, bool healthy,
                      const std::string& reason);
  // Appends `events` (each naming an existing job; seq is assigned by the
  // store) with the loop's next commit. Events of jobs the store does not
  // have are dropped with a warning, since the batch would fail with them.
  void recordEvents(std::vector<Event> events);

 private:
  struct CancelRequest;
  struct Live;  // a job with a current attempt
  struct HealthChange;
  class Pass;  // the writes and actions of one loop pass

  void loop();
  // Reads the queues in force from the store, seeding it from the config
  // file's when it holds none.
  Status loadQueues();
  // The queues in force, and options_.policy with them.
  std::vector<QueueConfig> queuesNow() const;
  PolicyConfig policyNow() const;
  // Puts `queues` in force and has the loop run a scheduling pass.
  void setQueues(std::vector<QueueConfig> queues);
  // The note of a queue change: quotas below use, a project that does not
  // exist, jobs left without a queue.
  std::string queueChangeNote(const QueueConfig& queue, const std::vector<QueueConfig>& queues,
                              bool created) const;
  Status recover(Pass& pass);
  void handleCancel(const std::shared_ptr<CancelRequest>& req, Pass& pass, Timestamp now);
  void handleExit(const ReplicaExit& exit, Pass& pass, Timestamp now);
  void handleTimers(Pass& pass, Timestamp now);
  void finishAttempt(Job& job, Live& live, Pass& pass, Timestamp now);
  void beginStop(Job& job, Live& live, Pass& pass, Timestamp now, const std::string& reason,
                 const std::string& why);
  static Status resolveQueue(JobSpec& spec, const std::vector<QueueConfig>& queues);
  std::vector<RunningJob> runningJobs() const;
  void accrueUsage(Pass& pass, Timestamp now);
  void applyPreemption(const Preemption& p, Pass& pass, Timestamp now);
  std::vector<QueueView> queueView() const;
  void schedulePass(Pass& pass, Timestamp now);
  void launch(Job& job, Live& live, Pass& pass, Timestamp now);
  bool commitAndAct(Pass& pass);
  Timestamp nextDeadline(Timestamp now) const;
  void publish();
  // options_.nodes with the health set by setGpuHealth applied.
  std::vector<NodeInfo> nodesNow() const;
  // For a job that waits for capacity: which unhealthy GPUs it waits for,
  // when with them healthy (and free) it would fit on some node; "" otherwise.
  std::string unhealthyNote(const PendingJob& job, const ClusterSnapshot& cluster) const;
  void handleHealthChange(const HealthChange& change, Pass& pass, Timestamp now);
  void report(const PassReport& r) const;

  Store& store_;
  Executor& executor_;
  const Clock& clock_;
  JobServiceOptions options_;
  SubmitBatcher batcher_;
  Rng rng_;
  std::unique_ptr<PlacementPolicy> placement_;  // made by start()

  // Inbox, guarded by inbox_mu_.
  mutable std::mutex inbox_mu_;
  std::condition_variable inbox_cv_;
  std::vector<Job> new_jobs_;
  std::vector<std::shared_ptr<CancelRequest>> cancels_;
  std::vector<ReplicaExit> exits_;
  bool stop_ = false;
  bool poke_ = false;
  bool reschedule_ = false;  // the queues changed: run a scheduling pass
  std::vector<HealthChange> health_changes_;
  std::vector<Event> recorded_events_;  // from recordEvents

  // The queues in force, guarded by queues_mu_; the loop and submit read
  // copies.
  mutable std::mutex queues_mu_;
  std::vector<QueueConfig> queues_;
  // Held shared by submit from choosing a job's queue until the job is
  // stored, and exclusively by queue changes. So a delete, which counts the
  // queue's jobs in the store, cannot miss a job that was given the queue
  // just before and stored just after. Never taken by the loop thread.
  std::shared_mutex admission_mu_;

  // Owned by the loop thread.
  std::map<JobId, Job> active_;
  std::map<JobId, std::unique_ptr<Live>> live_;
  std::map<JobId, WaitInfo> next_waiting_;  // from the last pass, until published
  // GPU-ms of service in each active job's ended attempts (service levels);
  // rebuilt from the stored attempts by recover().
  std::map<JobId, std::int64_t> attained_;
  std::map<std::string, DecayedUsage> usage_;  // fair-share usage by queue
  Timestamp usage_as_of_ = 0;
  Timestamp last_timer_check_ = 0;

  // Health set by setGpuHealth, by (node, GPU index), guarded by health_mu_;
  // GPUs without an entry keep what discovery said. Read by the loop and by
  // gpuHealth(). Not stored: a restart re-detects.
  struct GpuHealth {
    bool healthy = true;
    std::string reason;
    Timestamp since = 0;
  };
  mutable std::mutex health_mu_;
  std::map<std::pair<std::string, int>, GpuHealth> health_;

  // Published for readers, guarded by view_mu_.
  mutable std::mutex view_mu_;
  std::vector<NodeView> node_view_;
  std::map<JobId, WaitInfo> waiting_;
  std::vector<QueueView> queue_view_;

  std::atomic<bool> running_{false};
  // Set when a store write failed: the loop reads the state back before
  // acting on anything else.
  std::atomic<bool> needs_recovery_{false};
  std::thread thread_;
};

}  // namespace ty
