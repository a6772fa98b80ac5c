// The scheduler core: a pure function from a snapshot to a Decision.
//
// One pass, in order:
//  1. Accounting. Running jobs are charged to their queues' quota (see
//     queue.h) and to their current holdings for fair share.
//  2. Order. Pending jobs go by priority (high first), then by their queue's
//     weighted dominant share (fair_share.h: current holdings plus usage
//     decayed with a half-life, lowest first), then by submission time. The
//     share is updated as the pass admits jobs, so equal queues alternate.
//     Within a queue, least attained service comes before age; with
//     JobOrder::kLeastAttainedService it comes before the share too.
//  3. Admission, job by job in that order: the quota check (usage within
//     nominal plus what the cohort may lend), then a gang placement through
//     the placement policy (gang.h: all replicas or none, fewest nodes,
//     same_label). Cheap filters skip jobs that cannot fit: the free GPU
//     count per model, and shapes that already failed in this pass (the
//     cluster only fills up within a pass).
//  4. Preemption (preemption.h), for a job refused by quota or capacity: by
//     strictly higher priority inside its queue, or reclaim of quota that
//     cohort queues borrow, never a job younger than its min_runtime, the
//     fewest victims that let it fit. The preemptor is not placed in this
//     pass; what it will use is held for it. A job that fits once jobs
//     already stopping are gone waits for them instead of preempting more.
//  5. Backfill (backfill.h, EASY): the first job that still cannot start
//     gets a reservation at the time running jobs' max_runtime frees enough
//     for it; jobs behind it start only if they end before that time or
//     keep off the reserved nodes and GPUs.
//  6. Explanation: every waiting job gets a reason in words, its position
//     in its queue and, where the running jobs' ends allow, a start estimate.
//
// Same input, same Decision: no clock, thread, file or socket. See
// docs/scheduling.md for the rules and the systems they follow.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "common/rng.h"
#include "common/status.h"
#include "common/time.h"
#include "core/cluster.h"
#include "core/fair_share.h"
#include "core/job.h"
#include "core/node.h"
#include "core/placement.h"
#include "core/queue.h"

namespace ty {

// A job waiting to be placed. The first five fields are the ones every
// caller sets; the rest default to "no constraint".
struct PendingJob {
  JobId id;
  int priority = 0;
  Timestamp submitted = 0;
  Resources per_replica;
  int replicas = 1;
  // Default member initializers everywhere below, so that callers setting
  // only the first five fields stay warning-free.
  std::string queue{};    // queue name; empty: the first queue of `project`
  std::string project{};  // used when `queue` is empty or unknown
  std::string user{};
  std::map<std::string, std::string> node_selector{};
  std::string same_label{};    // replicas on nodes sharing this label's value
  DurationMs max_runtime = 0;  // 0: unlimited; a job with one may be backfilled
  DurationMs min_runtime = 0;  // carried to the running job: not preempted before
  // GPU-ms of service the job received in earlier runs (GPUs x time run, as
  // Tiresias counts it); 0 for a job that never ran. Orders jobs within a
  // priority level (JobOrder).
  std::int64_t attained_service = 0;
  // The service level applyServiceLevels() folded into `priority`; -1: none
  // (service_levels.h). For messages only: the order reads `priority`.
  int service_level = -1;
  ReplicaShape shape() const { return shapeOf(per_replica, node_selector); }
};

// A job holding resources. Its placements must also be counted as used in
// the ClusterSnapshot; this list says whose they are and how long they last.
struct RunningJob {
  JobId id;
  std::string queue;
  std::string project;
  int priority = 0;
  Resources per_replica;
  std::vector<ReplicaPlacement> replicas;
  Timestamp started_at = 0;
  DurationMs max_runtime = 0;        // 0: runs until it ends by itself
  DurationMs min_runtime = 0;        // not a victim before started_at + min_runtime
  Timestamp last_checkpoint_at = 0;  // 0: none; work since then is lost when stopped
  bool stopping = false;             // a stop was sent (preemption, cancel, timeout)
  JobId preempted_by;                // the preemptor when it stops for one; 0 otherwise
  // GPU-ms of service received in earlier runs (service_levels.h); the
  // current run is counted from started_at.
  std::int64_t attained_service = 0;
  int service_level = -1;  // as PendingJob::service_level
};

struct QueueSnapshot {
  std::vector<PendingJob> pending{};
  std::vector<RunningJob> running{};
  // Decayed past usage by queue name (fair_share.h); missing: none.
  std::map<std::string, DecayedUsage> usage{};
};

// How pending jobs of equal priority are ordered. Priority always comes
// first, and quota limits every order.
enum class JobOrder {
  // By the queue's weighted dominant share (fair_share.h), then, within a
  // queue, least attained service, then submission time.
  kFairShare,
  // Least attained service across queues (Tiresias' LAS, Gu et al. NSDI'19,
  // with continuous rather than discretised service), then the queue's
  // share, then submission time: short jobs finish first without anyone
  // knowing their duration.
  kLeastAttainedService,
};

// "fair-share", "least-attained-service"; nullopt when unknown.
const char* jobOrderName(JobOrder o);
std::optional<JobOrder> parseJobOrder(std::string_view name);

struct PolicyConfig {
  // Chooses nodes for replicas. Not owned; must outlive the call. Null: a
  // built-in best-fit.
  PlacementPolicy* placement = nullptr;
  std::vector<QueueConfig> queues;                           // none: every job is unlimited
  DurationMs fair_share_half_life = 7LL * 24 * 3600 * 1000;  // Slurm's default
  JobOrder order = JobOrder::kFairShare;
  bool backfill = true;
  bool preemption = true;
  // Kueue's borrowWithinCohort: a waiting job may also stop jobs of strictly
  // lower priority in other queues of its cohort while those queues borrow,
  // even when its own queue would borrow too. Off: only reclaim up to
  // nominal crosses queues. On by default: with service levels it is what
  // lets a short job of one queue pass a long one of a borrowing queue
  // (Jain's index over the Philly VCs 0.31 without it, 0.96 with it).
  bool borrow_within_cohort = true;
  // Reclaim (a queue within nominal stopping borrowers of its cohort) takes
  // only victims of lower or equal priority than the waiting job (Kueue's
  // reclaimWithinCohort: LowerPriority, with equal priority still allowed so
  // that quota comes back among equals). Off: any priority (Kueue's Any).
  // Priority levels that change as jobs run (service_levels.h) need it:
  // otherwise a demoted job of a queue below nominal stops a fresh job of a
  // borrowing queue, which then stops it back. On by default; the server
  // refuses service levels without it (the Philly replay thrashed: 3.3
  // million preemptions).
  bool reclaim_respects_priority = true;
  // Waiting jobs per pass that may look for victims (each try costs a few
  // placement attempts over the cluster).
  int max_preemption_attempts = 32;
  // Waiting jobs behind the reservation that get a start estimate.
  int estimate_depth = 4;
};

struct Placement {
  JobId job;
  std::vector<ReplicaPlacement> replicas;
};

enum class WaitReason {
  kCapacity,    // no nodes hold it now
  kQuota,       // its queue's quota is used up
  kReserved,    // would fit, but backfill holds the resources for an earlier job
  kPreempting,  // victims are stopping for it
};
const char* waitReasonName(WaitReason r);

struct Explanation {
  JobId job;
  int position = 0;               // 1-based place among the waiting jobs of its queue
  std::string message;            // "Waiting: needs 4 GPUs, 2 free on node local"
  Timestamp estimated_start = 0;  // 0: unknown
  WaitReason reason = WaitReason::kCapacity;
  std::string queue;
};

// A running job to stop so that `preemptor` can run. The caller stops the
// whole job (every replica), marks it stopping in later snapshots (with
// preempted_by) and requeues it.
struct Preemption {
  JobId victim;
  JobId preemptor;
  std::string message;  // "Preempted by job 12 (reclaim for project vision)"
};

// The backfill reservation of this pass, for display and the simulator.
struct ReservationInfo {
  JobId job;
  Timestamp start = 0;  // 0: unknown
  std::vector<ReplicaPlacement> replicas;
};

struct Decision {
  std::vector<Placement> placements;  // start these now
  std::vector<Explanation> waiting;   // in scheduling order
  std::vector<Preemption> preemptions;
  std::optional<ReservationInfo> reservation;
};

Decision schedule(const ClusterSnapshot& cluster, const QueueSnapshot& queues,
                  const PolicyConfig& config, Timestamp now, Rng& rng);

// Whether a job with this spec could ever run on an empty cluster of these
// nodes. Returns Infeasible naming the field ("resources.gpus: needs 16
// GPUs; the largest node has 8") otherwise.
Status checkFeasible(const JobSpec& spec, const std::vector<NodeInfo>& nodes);

// Whether the job's queue could ever admit it: Infeasible naming the field
// when all its replicas together ask for more than the queue's nominal plus
// what it may borrow (checkQuotaCeiling in queue.h words the refusal). GPU
// quotas per model apply when the job's selector pins the model, as in a
// pass. A job that merely has to wait is accepted; the pass explains why.
Status checkQuota(const JobSpec& spec, const PolicyConfig& config,
                  const std::vector<NodeInfo>& nodes);

// Snapshot entries from the job model, for callers that keep Jobs. A
// running job is stopping once a preemption or cancel was requested; the
// model has no checkpoint time yet, so last_checkpoint_at stays 0.
PendingJob pendingJobOf(const Job& job);
RunningJob runningJobOf(const Job& job, const Attempt& attempt);

// What each queue holds now, for accumulateUsage() between passes.
std::map<std::string, ResourceRate> heldByQueue(const std::vector<RunningJob>& running);

}  // namespace ty
