// Queues, cohorts and quota accounting (Kueue's ClusterQueue semantics).
//
// A queue belongs to a project and may sit in a cohort with other queues.
// For each resource it covers it has a quota:
//   nominal          what the queue is guaranteed;
//   borrowing_limit  how far above nominal it may go by using idle quota of
//                    its cohort (unset: no limit but the cohort's idle quota);
//   lending_limit    how much of its nominal the cohort may use while it is
//                    idle (unset: all of it).
// Per resource and cohort, each queue's usage first consumes its own
// unlendable part (nominal - lending_limit); everything above comes from the
// cohort pool, whose size is the sum of the members' lendable quota. A
// workload is admitted when, for every resource it asks for, the queue stays
// within nominal + borrowing_limit and the pool has room for the part above
// the unlendable share. A queue below nominal may thus be short of quota
// while others borrow its lendable part: that is when it may reclaim (see
// preemption.h). A queue without a cohort has a pool of its own, so it can
// use exactly its nominal.
//
// Claims (Kueue admits borrowing only when no queue of the cohort below its
// nominal has pending workloads that fit): a queue below nominal with
// pending work claims the pool quota that work needs, up to its nominal. A
// workload that would borrow may not take claimed quota. Without this, quota
// freed by a reclaim goes to whichever borrower the order puts first, and
// the reclaim repeats for ever. The scheduler adds claims priority level by
// level, so a claim only holds against borrowers of lower or equal priority.
//
// Resource names: "gpu" (all GPUs), "gpu:<model>" (GPUs whose model matches,
// as in gpuModelMatches: "gpu:A100" covers "NVIDIA A100-SXM4-80GB"), "cpu",
// "memory". Amounts are milli-GPU, millicores and bytes. A resource a queue
// has no quota for is not limited for it; a job in a queue with no config
// is not limited at all.
//
// QuotaLedger holds pointers into itself: not copyable; not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "core/job.h"

namespace ty {

using ResourceAmounts = std::map<std::string, std::int64_t>;

struct Quota {
  std::int64_t nominal = 0;
  std::optional<std::int64_t> borrowing_limit;  // unset: may borrow whatever the cohort has idle
  std::optional<std::int64_t> lending_limit;    // unset: lends all of its nominal
  // GPU and CPU quotas are written in whole units in the config.
  static Quota units(std::int64_t nominal, std::optional<std::int64_t> borrowing = std::nullopt,
                     std::optional<std::int64_t> lending = std::nullopt);
};

struct QueueConfig {
  std::string name;
  std::string project;  // shown in messages: "project vision uses ..."
  std::string cohort;   // empty: shares with no one
  double weight = 1;    // fair-share weight; 2 means twice the share of a queue of weight 1
  std::map<std::string, Quota> quotas;  // by resource name, see above
};

// Why a workload does not fit its queue's quota now: the first resource short.
struct QuotaShortfall {
  std::string resource;
  std::int64_t demand = 0;  // what the workload asks for
  std::int64_t usage = 0;   // what the queue holds now
  std::int64_t nominal = 0;
  std::optional<std::int64_t> borrowing_limit;
  std::int64_t cohort_idle = 0;       // lendable quota of the cohort nobody uses
  std::int64_t cohort_claimed = 0;    // of that, claimed by queues below nominal
  std::int64_t needed = 0;            // how much more must become free
  bool over_borrowing_limit = false;  // true: capped by borrowing_limit, not by the cohort
};

class QuotaLedger {
 public:
  explicit QuotaLedger(const std::vector<QueueConfig>& queues);
  QuotaLedger(const QuotaLedger&) = delete;
  QuotaLedger& operator=(const QuotaLedger&) = delete;

  // Index of the queue with this name, -1 when it has no config (no limits).
  int find(const std::string& name) const;
  const QueueConfig& config(int queue) const { return queues_[static_cast<size_t>(queue)].config; }
  int size() const { return static_cast<int>(queues_.size()); }
  // Every resource name some queue has a quota for.
  const std::vector<std::string>& resources() const { return resources_; }
  // The "gpu:<model>" resources: model selectors that quotas name.
  const std::vector<std::string>& gpuModelKeys() const { return model_keys_; }

  void add(int queue, const ResourceAmounts& amounts);
  void remove(int queue, const ResourceAmounts& amounts);
  std::int64_t usage(int queue, const std::string& resource) const;

  // Pending demand of a queue that fits within its nominal (replaces the
  // previous claim). Only the part up to nominal - usage counts, so the
  // claim shrinks by itself as the queue's usage grows.
  void setClaim(int queue, const ResourceAmounts& claim);
  // Adds to the claim (the scheduler raises claims priority level by level).
  void addClaim(int queue, const ResourceAmounts& amounts);
  void reduceClaim(int queue, const ResourceAmounts& amounts);

  // nullopt when the queue may take `demand` now. A demand that takes the
  // queue above nominal must also leave the other members' claims free.
  std::optional<QuotaShortfall> check(int queue, const ResourceAmounts& demand) const;
  // The most of `resource` the queue could ever hold: nominal plus what it
  // may borrow from the rest of the cohort. nullopt: not limited.
  std::optional<std::int64_t> ceiling(int queue, const std::string& resource) const;
  // What the other members of the queue's cohort could lend of `resource`
  // if all of them were idle: the sum of their lendable quota (each nominal
  // bounded by its lending_limit). 0 for a queue without a cohort.
  std::int64_t lendableByOthers(int queue, const std::string& resource) const;
  // Whether the queue holds more than its nominal of `resource`.
  bool borrowing(int queue, const std::string& resource) const;
  // Whether usage + demand stays within nominal for every covered resource
  // the demand touches (a queue in that state may reclaim).
  bool withinNominal(int queue, const ResourceAmounts& demand) const;
  // How much of `resource` the queue holds above its nominal now: what it
  // borrows from its cohort. 0 when the queue has no quota for it.
  std::int64_t borrowed(int queue, const std::string& resource) const;
  // How much of the queue's unused nominal of `resource` other queues of its
  // cohort use now. Borrowed quota is not tagged with its lender, so what
  // the cohort borrows in all is split over the members that leave lendable
  // quota idle (min(lendable, nominal - usage) each), in proportion to
  // that idle quota; the units lost to rounding go to the first of them in
  // queue order. The cohort's lent thus adds up to its borrowed (as long
  // as usage stays within the pool, which admission ensures). 0 for a queue
  // without a cohort or without quota for `resource`.
  std::int64_t lent(int queue, const std::string& resource) const;

 private:
  struct Slot;
  struct Pool {
    std::int64_t capacity = 0;  // sum of lendable quota
    std::int64_t used = 0;      // sum of usage above each member's guaranteed part
    std::vector<const Slot*> members;
  };
  struct Slot {
    Quota quota;
    std::int64_t guaranteed = 0;  // nominal - lendable: never lent
    std::int64_t usage = 0;
    std::int64_t claim = 0;  // pending demand within nominal
    Pool* pool = nullptr;    // into pools_, whose nodes never move
  };
  // The pool quota a member's claim holds back from borrowers.
  static std::int64_t claimedFromPool(const Slot& s);
  struct Entry {
    QueueConfig config;
    std::string pool_key;  // cohort name, or a private key for a queue without one
    std::map<std::string, Slot> slots;
  };
  const Pool* pool(const Entry& e, const std::string& resource) const;
  void change(int queue, const ResourceAmounts& amounts, int sign);

  std::vector<Entry> queues_;
  std::map<std::string, int> by_name_;
  std::map<std::string, std::map<std::string, Pool>> pools_;  // pool key -> resource -> pool
  std::vector<std::string> resources_;
  std::vector<std::string> model_keys_;
};

// The queue a job is charged to, the rule the scheduler uses: the queue its
// spec names when one of `queues` has that name, else the first queue of
// the job's project (in `queues` order); nullptr when neither exists (the
// job is limited by no quota). Points into `queues`.
const QueueConfig* jobQueue(const std::vector<QueueConfig>& queues, const std::string& queue,
                            const std::string& project);

// The creation time of the oldest pending job of each queue, by queue name.
// A job belongs to the queue it is charged to (jobQueue); one in no
// configured queue counts for the queue its spec names ("default" on a
// server without queues).
std::map<std::string, Timestamp> oldestPendingByQueue(const std::vector<QueueConfig>& queues,
                                                      const std::vector<Job>& jobs);

// "8" for GPUs and CPUs, "16Gi" for memory.
std::string formatAmount(const std::string& resource, std::int64_t amount);
// "GPUs", "A100 GPUs", "CPUs", "memory".
std::string resourceNoun(const std::string& resource);
// "project vision uses 8 of 8 nominal A100 GPUs; borrowing 2 of 4 allowed;
// waiting for 2 A100 GPUs".
std::string describeShortfall(const QueueConfig& queue, const QuotaShortfall& s);
// "project vision" or "project vision (queue vision-batch)" or "queue q".
std::string describeOwner(const QueueConfig& queue);

// Submit-time check: whether a gang of `replicas` replicas, each asking
// `per_replica` (resource -> amount, as the scheduler charges quota), could
// ever be admitted by queue `queue` of `ledger`, even with the whole cohort
// idle. All replicas count together, since a gang is admitted at once; the
// limit per resource is ceiling(). Ok when it fits, when the queue has no
// config (queue < 0) or no quota for a resource. Otherwise Infeasible for
// the first resource over (GPU quotas first), naming the spec field to
// change: the resource's field ("resources.gpus", "resources.cpus",
// "resources.memory") when one replica alone is too large, "replicas" when
// only the gang is. The message says the limit, where it comes from and
// what to do:
//   project nlp may use at most 8 A100 GPUs in queue nlp (nominal 8,
//   borrowing limit 0); this job asks for 16 (2 replicas x 8); reduce
//   resources.gpus or replicas, or ask an admin to raise the queue's quota
Status checkQuotaCeiling(const QuotaLedger& ledger, int queue, const ResourceAmounts& per_replica,
                         int replicas);

}  // namespace ty
