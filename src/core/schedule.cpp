#include "core/schedule.h"

#include <algorithm>
#include <memory>
#include <set>
#include <span>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "common/units.h"
#include "core/backfill.h"
#include "core/explain.h"
#include "core/gang.h"
#include "core/preemption.h"
#include "core/service_levels.h"

namespace ty {
namespace {

std::unique_ptr<PlacementPolicy> builtinBestFit() {
  auto p = makePlacementPolicy("best-fit", {});
  if (!p.isOk()) std::abort();  // the built-in policy is always there
  return std::move(p).value();
}

// Queue index in the ledger for a job, by jobQueue()'s rule (queue.h),
// which the API's queue filter shares.
int resolveQueue(const QuotaLedger& ledger, const std::vector<QueueConfig>& queues,
                 const std::string& queue, const std::string& project) {
  const QueueConfig* c = jobQueue(queues, queue, project);
  return c ? ledger.find(c->name) : -1;
}

// Model keys ("A100" of "gpu:A100") that a GPU selector pins: every model
// in the cluster that the selector accepts falls under the key.
std::vector<std::string> pinnedModelKeys(const std::vector<std::string>& selector,
                                         const std::vector<std::string>& keys,
                                         const std::set<std::string>& models) {
  std::vector<std::string> out;
  if (selector.empty()) return out;
  for (const auto& key : keys) {
    bool any = false;
    bool all = true;
    for (const auto& m : models) {
      if (!gpuModelMatches(selector, m)) continue;
      any = true;
      if (!gpuModelMatches({key}, m)) all = false;
    }
    if (any && all) out.push_back(key);
  }
  return out;
}

// What a job asks of quota before it is placed.
ResourceAmounts requestAmounts(const ReplicaShape& s, int replicas,
                               const std::vector<std::string>& pinned) {
  ResourceAmounts out;
  std::int64_t gpu = s.totalGpuMilli() * replicas;
  if (s.gpu_count == 0) gpu = 0;
  if (gpu > 0) {
    out["gpu"] = gpu;
    for (const auto& k : pinned) out["gpu:" + k] = gpu;
  }
  if (!s.cpus.isZero()) out["cpu"] = s.cpus.milli() * replicas;
  if (s.memory_bytes > 0) out["memory"] = s.memory_bytes * replicas;
  return out;
}

// Pending jobs with equal shape, replica count and same_label share one
// ShapeInfo. The hash looks only at what a job asks, so that finding the
// shape of each of 100,000 jobs builds nothing.
std::size_t shapeHash(const PendingJob& p) {
  const std::hash<std::string_view> h;
  std::size_t out = static_cast<std::size_t>(p.per_replica.gpus.milli());
  auto mix = [&](std::size_t v) { out = out * 1000003 ^ v; };
  mix(static_cast<std::size_t>(p.per_replica.cpus.milli()));
  mix(static_cast<std::size_t>(p.per_replica.memory_bytes));
  mix(static_cast<std::size_t>(p.replicas));
  mix(h(p.same_label));
  for (const auto& t : p.per_replica.gpu_types) mix(h(t));
  for (const auto& [k, v] : p.node_selector) mix(h(k) ^ (h(v) << 1));
  return out;
}

struct ShapeInfo {
  ReplicaShape shape;
  int replicas = 1;
  std::string same_label;
  ModelMask mask;  // cluster GPU models the selector accepts
  std::vector<std::string> pinned;
  ResourceAmounts request;        // what a job of this shape asks of quota
  bool failed_open = false;       // did not fit even with the reservation's resources
  bool failed_blocked = false;    // did not fit around the reservation
  std::optional<bool> fits_open;  // whether it fits the resources the reservation holds
  std::optional<Timestamp> estimate;
  std::string capacity_message;
};

struct QueueState {
  std::string name;
  int ledger = -1;
  double weight = 1;
  ResourceRate held;
  DecayedUsage usage;
  double share = 0;
  std::vector<std::size_t> jobs;  // pending, in queue order
  std::size_t next = 0;
  int waiting = 0;  // positions handed out
};

ResourceRate rateOf(const ReplicaShape& s, int replicas) {
  ResourceRate r;
  r.gpu = s.gpu_count == 0 ? 0 : static_cast<double>(s.totalGpuMilli() * replicas);
  r.cpu = static_cast<double>(s.cpus.milli() * replicas);
  r.memory = static_cast<double>(s.memory_bytes * replicas);
  return r;
}

// A running job's replica on a known node. Its GPU positions are a range
// of Pass::run_gpus_: one pass loads tens of thousands of running jobs, and
// flat storage spares an allocation per replica.
struct RunReplica {
  std::size_t node = 0;
  std::uint32_t first_gpu = 0;
  std::uint32_t gpus = 0;
};

// Kept small (a pass holds one per running job); the rest is read from
// the RunningJob when needed.
struct RunInfo {
  const RunningJob* job = nullptr;
  int queue = -1;   // QueueState index
  int ledger = -1;  // ledger index
  // The GPUs held per replica: the share actually held, which may differ
  // from what per_replica asks.
  int gpu_count = 0;
  int gpu_milli = 1000;
  std::uint32_t first_replica = 0;  // its replicas on known nodes in Pass::run_replicas_
  std::uint32_t replicas = 0;
  bool victim = false;  // chosen in this pass
  // What it holds per replica, as it was taken.
  ReplicaShape shape() const {
    ReplicaShape s = heldShapeOf(job->per_replica);
    s.gpu_count = gpu_count;
    s.gpu_milli = gpu_milli;
    return s;
  }
  ResourceRate held() const { return rateOf(shape(), static_cast<int>(job->replicas.size())); }
};

// Running jobs and pending jobs name their queue by (queue, project); the
// views point into the QueueSnapshot, which outlives the pass.
struct QueueKey {
  std::string_view queue;
  std::string_view project;
  bool operator==(const QueueKey&) const = default;
};
struct QueueKeyHash {
  std::size_t operator()(const QueueKey& k) const {
    const std::hash<std::string_view> h;
    return h(k.queue) * 31 + h(k.project);
  }
};

struct JobInfo {
  const PendingJob* job = nullptr;
  int queue = -1;
  int ledger = -1;
  int shape = -1;
  bool claimable = false;  // fits within nominal on its own: may claim (queue.h)
  bool claimed = false;    // its request counts in its queue's claim now
};

class Pass {
 public:
  Pass(const ClusterSnapshot& cluster, const QueueSnapshot& queues, const PolicyConfig& config,
       Timestamp now, PlacementPolicy& policy, Rng& rng)
      : cluster_(cluster),
        queues_(queues),
        config_(config),
        now_(now),
        policy_(policy),
        rng_(rng),
        state_(cluster),
        ledger_(config.queues) {}

  Decision run();

 private:
  void indexCluster();
  int queueIndex(const std::string& name, const std::string& project);
  void loadRunning();
  void loadPending();
  int shapeIndex(const PendingJob& p, std::unordered_map<std::size_t, std::vector<int>>& ids);
  // What the job asks of its queue's quota; nothing for a job without one.
  const ResourceAmounts& requestOf(const JobInfo& job) const {
    static const ResourceAmounts kNone;
    return job.ledger >= 0 ? shapes_[static_cast<std::size_t>(job.shape)].request : kNone;
  }
  std::size_t nextJob();
  void admit(std::size_t j);
  void wait(std::size_t j, WaitReason reason, std::string message, Timestamp estimate = 0);
  bool enoughFreeGpus(const ShapeInfo& s) const;
  ResourceAmounts amountsOf(const std::vector<NodeChoice>& choices, const ReplicaShape& s,
                            int replicas) const;
  const ResourceAmounts& amountsOf(const RunInfo& r);
  void chargeGpus(ResourceAmounts& out, std::size_t node, std::span<const int> positions,
                  const ReplicaShape& s) const;
  std::span<const RunReplica> replicasOf(const RunInfo& r) const {
    return {run_replicas_.data() + r.first_replica, r.replicas};
  }
  std::span<const int> gpusOf(const RunReplica& r) const {
    return {run_gpus_.data() + r.first_gpu, r.gpus};
  }
  std::vector<NodeChoice> choicesOf(const RunInfo& r) const;
  void takeReplica(std::size_t node, std::span<const int> positions, const ReplicaShape& s);
  void giveReplica(std::size_t node, std::span<const int> positions, const ReplicaShape& s);
  void take(const std::vector<NodeChoice>& choices, const ReplicaShape& s);
  void give(const std::vector<NodeChoice>& choices, const ReplicaShape& s);
  void take(const RunInfo& r);
  void give(const RunInfo& r);
  std::optional<std::vector<NodeChoice>> placeOpen(const ShapeInfo& s, bool keep);
  void recompute(QueueState& q);
  void claim(int priority);
  void unclaim(JobInfo& job);
  Timestamp quotaEstimate(const JobInfo& job);
  void waitQuota(std::size_t j, const QuotaShortfall& short_of);
  bool tryPreempt(std::size_t j);
  void buildReleases();
  Timestamp estimate(ShapeInfo& s);
  // The reservation's hold on the state. It bypasses the free counters,
  // which describe the state without it.
  void hold() {
    if (reservation_) takeAll(state_, reservation_->choices, reservedShape());
  }
  void lift() {
    if (reservation_) giveAll(state_, reservation_->choices, reservedShape());
  }
  const ReplicaShape& reservedShape() const {
    return shapes_[static_cast<std::size_t>(reserved_shape_)].shape;
  }
  void finish(Decision& d);

  const ClusterSnapshot& cluster_;
  const QueueSnapshot& queues_;
  const PolicyConfig& config_;
  Timestamp now_;
  PlacementPolicy& policy_;
  Rng& rng_;
  ClusterState state_;
  QuotaLedger ledger_;
  ResourceRate capacity_;
  std::unordered_map<std::string_view, std::size_t> node_index_;  // views into the snapshot
  std::set<std::string> models_;
  std::vector<std::int64_t> free_by_model_;  // milli-GPU by model id, each GPU counted >= 0
  std::vector<std::vector<std::string>> quota_keys_by_model_;  // "gpu:<key>" matching each model
  std::vector<QueueState> qs_;
  std::unordered_map<std::string, int> q_by_name_;
  std::unordered_map<QueueKey, int, QueueKeyHash> q_by_raw_;  // as jobs give them
  std::vector<RunInfo> running_;
  std::vector<RunReplica> run_replicas_;
  std::vector<int> run_gpus_;
  // The quota of single running jobs, built when first asked (amountsOf):
  // most running jobs are only summed per queue, never looked at alone.
  std::unordered_map<const RunInfo*, ResourceAmounts> run_amounts_;
  std::vector<JobInfo> jobs_;
  std::vector<ShapeInfo> shapes_;
  Decision out_;
  // Per waiting job, in order: its reason; messages are filled at the end.
  struct Waiting {
    std::size_t job;
    WaitReason reason;
    std::string message;
    Timestamp estimate;
  };
  std::vector<Waiting> waiting_;
  // Backfill.
  int reservation_attempts_ = 0;
  // Claims count for jobs of this priority and above (see claim()).
  std::optional<int> claim_level_;
  std::optional<Reservation> reservation_;
  int reserved_shape_ = -1;
  JobId reserved_job_;
  std::vector<Release> releases_;
  std::vector<Release> placed_releases_;
  // Quota held by jobs placed in this pass, for quota estimates.
  struct PlacedQuota {
    int ledger = -1;
    ResourceAmounts amounts;
    Timestamp end = 0;  // 0: unknown
  };
  std::vector<PlacedQuota> placed_quota_;
  // Running and placed quota holders in order of their end, built on the
  // first quota estimate, end 0 (unknown) last.
  struct QuotaEnd {
    Timestamp end = 0;
    int ledger = -1;
    const RunInfo* run = nullptr;  // null: placed in this pass
    std::size_t placed = 0;        // into placed_quota_, which may still grow
  };
  const ResourceAmounts& amountsOf(const QuotaEnd& e) {
    return e.run ? amountsOf(*e.run) : placed_quota_[e.placed].amounts;
  }
  std::vector<QuotaEnd> quota_ends_;
  bool quota_ends_built_ = false;
  std::map<std::pair<int, int>, Timestamp> quota_estimates_;  // by (ledger, shape)
  std::optional<ClusterState> future_;  // for estimates behind the reservation
  int estimates_ = 0;
  int preemption_attempts_ = 0;
  std::vector<std::vector<std::size_t>> running_by_queue_;  // by QueueState index
  // (queue, priority, shape) that found no victims: the cluster only fills
  // up within a pass, so they would not find any later in it either.
  std::set<std::tuple<int, int, int>> no_victims_;
};

void Pass::indexCluster() {
  const auto& nodes = state_.nodes();
  const auto& models = state_.gpuModels();
  models_.insert(models.begin(), models.end());
  free_by_model_.assign(models.size(), 0);
  quota_keys_by_model_.resize(models.size());
  for (std::size_t m = 0; m < models.size(); ++m) {
    for (const auto& k : ledger_.gpuModelKeys()) {
      if (gpuModelMatches({k}, models[m])) quota_keys_by_model_[m].push_back("gpu:" + k);
    }
  }
  node_index_.reserve(nodes.size());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    node_index_.insert_or_assign(nodes[i].info->name, i);
    const NodeFree& n = nodes[i];
    capacity_.cpu += static_cast<double>(n.info->cpus.milli());
    capacity_.memory += static_cast<double>(n.info->memory_bytes);
    for (std::size_t g = 0; g < n.gpu_free.size(); ++g) {
      if (n.gpu_free[g] < 0) continue;
      capacity_.gpu += 1000;
      free_by_model_[static_cast<std::size_t>(n.gpu_model[g])] += n.gpu_free[g];
    }
  }
}

int Pass::queueIndex(const std::string& name, const std::string& project) {
  // Thousands of jobs name the same few queues: one hash lookup each.
  const QueueKey raw{name, project};
  auto seen = q_by_raw_.find(raw);
  if (seen != q_by_raw_.end()) return seen->second;
  int ledger = resolveQueue(ledger_, config_.queues, name, project);
  std::string key = ledger >= 0 ? ledger_.config(ledger).name : name;
  auto it = q_by_name_.find(key);
  if (it != q_by_name_.end()) {
    q_by_raw_.emplace(raw, it->second);
    return it->second;
  }
  QueueState q;
  q.name = key;
  q.ledger = ledger;
  if (ledger >= 0) q.weight = ledger_.config(ledger).weight;
  auto u = queues_.usage.find(key);
  if (u != queues_.usage.end()) q.usage = u->second;
  int index = static_cast<int>(qs_.size());
  qs_.push_back(std::move(q));
  q_by_name_[key] = index;
  q_by_raw_.emplace(raw, index);
  return index;
}

void Pass::chargeGpus(ResourceAmounts& out, std::size_t node, std::span<const int> positions,
                      const ReplicaShape& s) const {
  const std::int64_t milli = s.gpu_count == 0 ? 0 : s.gpu_milli;
  const NodeFree& n = state_.nodes()[node];
  for (int p : positions) {
    out["gpu"] += milli;
    const auto model = static_cast<std::size_t>(n.gpu_model[static_cast<std::size_t>(p)]);
    for (const auto& k : quota_keys_by_model_[model]) out[k] += milli;
  }
}

ResourceAmounts Pass::amountsOf(const std::vector<NodeChoice>& choices, const ReplicaShape& s,
                                int replicas) const {
  ResourceAmounts out;
  for (const auto& c : choices) chargeGpus(out, c.node, c.gpu_positions, s);
  if (!s.cpus.isZero()) out["cpu"] = s.cpus.milli() * replicas;
  if (s.memory_bytes > 0) out["memory"] = s.memory_bytes * replicas;
  return out;
}

const ResourceAmounts& Pass::amountsOf(const RunInfo& r) {
  auto [it, inserted] = run_amounts_.try_emplace(&r);
  if (inserted) {
    const ReplicaShape shape = r.shape();
    ResourceAmounts& out = it->second;
    for (const RunReplica& rr : replicasOf(r)) chargeGpus(out, rr.node, gpusOf(rr), shape);
    const auto replicas = static_cast<std::int64_t>(r.job->replicas.size());
    if (!shape.cpus.isZero()) out["cpu"] = shape.cpus.milli() * replicas;
    if (shape.memory_bytes > 0) out["memory"] = shape.memory_bytes * replicas;
  }
  return it->second;
}

std::vector<NodeChoice> Pass::choicesOf(const RunInfo& r) const {
  std::vector<NodeChoice> out;
  out.reserve(r.replicas);
  for (const RunReplica& rr : replicasOf(r)) {
    const auto gpus = gpusOf(rr);
    out.push_back({rr.node, {gpus.begin(), gpus.end()}});
  }
  return out;
}

// Running jobs are charged to the ledger per queue, not per job: usage is a
// sum, and a queue's pool share depends only on its total, so one charge
// per queue leaves the ledger as job-by-job charges would, without building
// a map of amounts for each of tens of thousands of jobs.
void Pass::loadRunning() {
  struct Held {
    std::vector<std::int64_t> gpu_by_model;  // milli-GPU on GPUs of each model
    std::int64_t cpu = 0;
    std::int64_t memory = 0;
  };
  std::vector<Held> held_by_queue;
  const std::size_t models = state_.gpuModels().size();
  running_.reserve(queues_.running.size());
  run_replicas_.reserve(queues_.running.size());
  for (const auto& r : queues_.running) {
    RunInfo info;
    info.job = &r;
    info.queue = queueIndex(r.queue, r.project);
    info.ledger = qs_[static_cast<std::size_t>(info.queue)].ledger;
    const ReplicaShape asked = heldShapeOf(r.per_replica);
    info.gpu_count = asked.gpu_count;
    info.gpu_milli = asked.gpu_milli;
    info.first_replica = static_cast<std::uint32_t>(run_replicas_.size());
    for (const auto& p : r.replicas) {
      auto it = node_index_.find(p.node);
      if (it == node_index_.end()) continue;  // a node that left: nothing to free there
      RunReplica rr{it->second, static_cast<std::uint32_t>(run_gpus_.size()), 0};
      const std::span<const int> indices = state_.gpuIndices(it->second);
      for (int g : p.gpus) {
        for (std::size_t pos = 0; pos < indices.size(); ++pos) {
          if (indices[pos] == g) run_gpus_.push_back(static_cast<int>(pos));
        }
      }
      rr.gpus = static_cast<std::uint32_t>(run_gpus_.size()) - rr.first_gpu;
      run_replicas_.push_back(rr);
    }
    info.replicas = static_cast<std::uint32_t>(run_replicas_.size()) - info.first_replica;
    // The shape the choices were taken with: the share actually held.
    if (!r.replicas.empty() && !r.replicas[0].gpus.empty()) {
      info.gpu_milli = r.replicas[0].gpu_milli;
      info.gpu_count = static_cast<int>(r.replicas[0].gpus.size());
    }
    const int replicas = static_cast<int>(r.replicas.size());
    if (held_by_queue.size() < qs_.size()) held_by_queue.resize(qs_.size());
    Held& h = held_by_queue[static_cast<std::size_t>(info.queue)];
    if (h.gpu_by_model.empty()) h.gpu_by_model.assign(models, 0);
    const std::int64_t milli = info.gpu_count == 0 ? 0 : info.gpu_milli;
    for (const RunReplica& rr : replicasOf(info)) {
      const NodeFree& n = state_.nodes()[rr.node];
      for (int pos : gpusOf(rr)) {
        h.gpu_by_model[static_cast<std::size_t>(n.gpu_model[static_cast<std::size_t>(pos)])] +=
            milli;
      }
    }
    if (!asked.cpus.isZero()) h.cpu += asked.cpus.milli() * replicas;
    if (asked.memory_bytes > 0) h.memory += asked.memory_bytes * replicas;
    qs_[static_cast<std::size_t>(info.queue)].held += info.held();
    running_.push_back(std::move(info));
  }
  for (std::size_t q = 0; q < held_by_queue.size(); ++q) {
    const Held& h = held_by_queue[q];
    ResourceAmounts amounts;
    for (std::size_t m = 0; m < h.gpu_by_model.size(); ++m) {
      if (h.gpu_by_model[m] == 0) continue;
      amounts["gpu"] += h.gpu_by_model[m];
      for (const auto& k : quota_keys_by_model_[m]) amounts[k] += h.gpu_by_model[m];
    }
    if (h.cpu > 0) amounts["cpu"] = h.cpu;
    if (h.memory > 0) amounts["memory"] = h.memory;
    ledger_.add(qs_[q].ledger, amounts);
  }
}

int Pass::shapeIndex(const PendingJob& p, std::unordered_map<std::size_t, std::vector<int>>& ids) {
  std::vector<int>& same_hash = ids[shapeHash(p)];
  const ReplicaShape held = heldShapeOf(p.per_replica);
  for (int id : same_hash) {
    const ShapeInfo& s = shapes_[static_cast<std::size_t>(id)];
    if (s.replicas == p.replicas && s.same_label == p.same_label && s.shape.cpus == held.cpus &&
        s.shape.gpu_count == held.gpu_count && s.shape.gpu_milli == held.gpu_milli &&
        s.shape.memory_bytes == held.memory_bytes && s.shape.gpu_types == p.per_replica.gpu_types &&
        s.shape.node_selector == p.node_selector) {
      return id;
    }
  }
  ShapeInfo s;
  s.shape = p.shape();
  s.replicas = p.replicas;
  s.same_label = p.same_label;
  s.mask = state_.modelMask(s.shape);
  s.pinned = pinnedModelKeys(s.shape.gpu_types, ledger_.gpuModelKeys(), models_);
  s.request = requestAmounts(s.shape, s.replicas, s.pinned);
  const int id = static_cast<int>(shapes_.size());
  same_hash.push_back(id);
  shapes_.push_back(std::move(s));
  return id;
}

void Pass::loadPending() {
  std::unordered_map<std::size_t, std::vector<int>> shape_ids;
  jobs_.reserve(queues_.pending.size());
  for (const auto& p : queues_.pending) {
    JobInfo j;
    j.job = &p;
    j.queue = queueIndex(p.queue, p.project);
    j.ledger = qs_[static_cast<std::size_t>(j.queue)].ledger;
    j.shape = shapeIndex(p, shape_ids);
    qs_[static_cast<std::size_t>(j.queue)].jobs.push_back(jobs_.size());
    jobs_.push_back(j);
  }
  // Sorted on copies of the fields the order reads, not through pointers
  // into the snapshot, which miss the cache at every comparison.
  struct OrderKey {
    int priority;
    std::int64_t attained_service;
    Timestamp submitted;
    JobId id;
    std::size_t job;
  };
  std::vector<OrderKey> keys;
  for (auto& q : qs_) {
    keys.clear();
    for (std::size_t j : q.jobs) {
      const PendingJob& p = *jobs_[j].job;
      keys.push_back({p.priority, p.attained_service, p.submitted, p.id, j});
    }
    std::stable_sort(keys.begin(), keys.end(), [](const OrderKey& x, const OrderKey& y) {
      if (x.priority != y.priority) return x.priority > y.priority;
      // A job that already had service waits behind fresh ones of its
      // queue: least attained service first within a priority level.
      if (x.attained_service != y.attained_service) {
        return x.attained_service < y.attained_service;
      }
      if (x.submitted != y.submitted) return x.submitted < y.submitted;
      return x.id < y.id;
    });
    for (std::size_t k = 0; k < keys.size(); ++k) q.jobs[k] = keys[k].job;
    recompute(q);
  }
}

void Pass::recompute(QueueState& q) {
  q.share = dominantShare(q.held, q.usage, capacity_, config_.fair_share_half_life, q.weight);
}

// Queues below nominal claim the quota their pending jobs need (queue.h),
// so that borrowers cannot take quota such a queue waits for, in particular
// quota it just reclaimed by preemption. Only jobs that fit within nominal
// on their own claim: a job that must borrow has no better right than any
// other borrower.
//
// A claim holds quota only against borrowers of lower or equal priority:
// a demoted job of a queue below nominal must not keep a fresh job of
// higher priority in a borrowing queue waiting, which would invert the
// priority order across queues. Jobs come in order of priority (highest
// first), so the pass raises the claims level by level: when the order
// reaches `priority`, the claims of every job of that priority or higher
// that still waits its turn count.
void Pass::claim(int priority) {
  if (claim_level_ && *claim_level_ <= priority) return;
  const bool first = !claim_level_;
  claim_level_ = priority;
  std::vector<ResourceAmounts> claims(static_cast<std::size_t>(ledger_.size()));
  bool any = false;
  for (auto& job : jobs_) {
    if (first) {
      job.claimable = job.ledger >= 0 && ledger_.withinNominal(job.ledger, requestOf(job));
      job.claimed = false;
    }
    if (!job.claimable || job.job->priority < priority) continue;
    job.claimable = false;  // claims once; unclaim() ends it
    job.claimed = true;
    any = true;
    for (const auto& [res, amount] : requestOf(job)) {
      claims[static_cast<std::size_t>(job.ledger)][res] += amount;
    }
  }
  if (!any && !first) return;
  for (int q = 0; q < ledger_.size(); ++q) {
    ledger_.addClaim(q, claims[static_cast<std::size_t>(q)]);
  }
}

// A job stops claiming once it holds its quota, or once it waits for
// capacity: quota it cannot use now is lent, as before.
void Pass::unclaim(JobInfo& job) {
  if (!job.claimed) return;
  job.claimed = false;
  ledger_.reduceClaim(job.ledger, requestOf(job));
}

void Pass::waitQuota(std::size_t j, const QuotaShortfall& short_of) {
  const JobInfo& job = jobs_[j];
  std::string message = "Waiting: " + describeShortfall(ledger_.config(job.ledger), short_of);
  wait(j, WaitReason::kQuota, std::move(message), quotaEstimate(job));
}

// When the queue's quota lets the job in: give back the quota of running
// jobs (and those placed in this pass) of its queue and cohort in order of
// their end until the check passes. 0 when that takes a job without an end.
// The capacity the job then needs is not looked at; a later pass refines.
Timestamp Pass::quotaEstimate(const JobInfo& job) {
  if (job.ledger < 0) return 0;
  const auto key = std::make_pair(job.ledger, job.shape);
  if (auto it = quota_estimates_.find(key); it != quota_estimates_.end()) return it->second;
  // Each estimate walks the running jobs: a few per pass, as for capacity.
  if (static_cast<int>(quota_estimates_.size()) >= 4 * std::max(1, config_.estimate_depth)) {
    return 0;
  }
  if (!quota_ends_built_) {
    quota_ends_built_ = true;
    auto endOf = [&](const RunInfo& r) -> Timestamp {
      if (r.job->stopping || r.victim) return now_;
      if (r.job->max_runtime > 0) return std::max(now_, r.job->started_at + r.job->max_runtime);
      return 0;
    };
    for (const auto& r : running_) {
      if (r.ledger >= 0) quota_ends_.push_back({endOf(r), r.ledger, &r, 0});
    }
    for (std::size_t i = 0; i < placed_quota_.size(); ++i) {
      quota_ends_.push_back({placed_quota_[i].end, placed_quota_[i].ledger, nullptr, i});
    }
    std::stable_sort(quota_ends_.begin(), quota_ends_.end(),
                     [](const QuotaEnd& a, const QuotaEnd& b) {
                       if ((a.end == 0) != (b.end == 0)) return b.end == 0;
                       return a.end < b.end;
                     });
  }
  const std::string& cohort = ledger_.config(job.ledger).cohort;
  Timestamp out = 0;
  std::vector<std::size_t> given;
  for (std::size_t i = 0; i < quota_ends_.size(); ++i) {
    const QuotaEnd& e = quota_ends_[i];
    if (e.end == 0) break;  // the rest never ends by itself
    // A victim of this pass has handed its quota over already.
    if (e.run && e.run->victim) continue;
    if (e.ledger != job.ledger && (cohort.empty() || ledger_.config(e.ledger).cohort != cohort)) {
      continue;
    }
    ledger_.remove(e.ledger, amountsOf(e));
    given.push_back(i);
    if (!ledger_.check(job.ledger, requestOf(job))) {
      out = e.end;
      break;
    }
  }
  for (auto it = given.rbegin(); it != given.rend(); ++it) {
    ledger_.add(quota_ends_[*it].ledger, amountsOf(quota_ends_[*it]));
  }
  quota_estimates_.emplace(key, out);
  return out;
}

// The next job in order: highest priority at the head of a queue, then
// (JobOrder::kLeastAttainedService) the least attained service, then the
// lowest share, then the oldest.
std::size_t Pass::nextJob() {
  int best = -1;
  for (std::size_t i = 0; i < qs_.size(); ++i) {
    const QueueState& q = qs_[i];
    if (q.next >= q.jobs.size()) continue;
    if (best < 0) {
      best = static_cast<int>(i);
      continue;
    }
    const QueueState& b = qs_[static_cast<std::size_t>(best)];
    const PendingJob& x = *jobs_[q.jobs[q.next]].job;
    const PendingJob& y = *jobs_[b.jobs[b.next]].job;
    const bool las = config_.order == JobOrder::kLeastAttainedService;
    bool better = x.priority != y.priority ? x.priority > y.priority
                  : las && x.attained_service != y.attained_service
                      ? x.attained_service < y.attained_service
                  : q.share != b.share         ? q.share < b.share
                  : x.submitted != y.submitted ? x.submitted < y.submitted
                                               : x.id < y.id;
    if (better) best = static_cast<int>(i);
  }
  if (best < 0) return jobs_.size();
  QueueState& q = qs_[static_cast<std::size_t>(best)];
  return q.jobs[q.next++];
}

// Every change to the state goes through these two, which keep the free
// GPU counters by model exact.
void Pass::takeReplica(std::size_t node, std::span<const int> positions, const ReplicaShape& s) {
  const NodeFree& n = state_.nodes()[node];
  for (int p : positions) {
    const int f = n.gpu_free[static_cast<std::size_t>(p)];
    free_by_model_[static_cast<std::size_t>(n.gpu_model[static_cast<std::size_t>(p)])] +=
        std::max(0, f - s.gpu_milli) - std::max(0, f);
  }
  state_.take(node, positions, s);
}

void Pass::giveReplica(std::size_t node, std::span<const int> positions, const ReplicaShape& s) {
  const NodeFree& n = state_.nodes()[node];
  for (int p : positions) {
    const int f = n.gpu_free[static_cast<std::size_t>(p)];
    free_by_model_[static_cast<std::size_t>(n.gpu_model[static_cast<std::size_t>(p)])] +=
        std::max(0, f + s.gpu_milli) - std::max(0, f);
  }
  state_.give(node, positions, s);
}

void Pass::take(const std::vector<NodeChoice>& choices, const ReplicaShape& s) {
  for (const auto& c : choices) takeReplica(c.node, c.gpu_positions, s);
}

void Pass::give(const std::vector<NodeChoice>& choices, const ReplicaShape& s) {
  for (auto it = choices.rbegin(); it != choices.rend(); ++it) {
    giveReplica(it->node, it->gpu_positions, s);
  }
}

void Pass::take(const RunInfo& r) {
  const ReplicaShape shape = r.shape();
  for (const RunReplica& rr : replicasOf(r)) takeReplica(rr.node, gpusOf(rr), shape);
}

void Pass::give(const RunInfo& r) {
  const ReplicaShape shape = r.shape();
  const auto replicas = replicasOf(r);
  for (auto it = replicas.rbegin(); it != replicas.rend(); ++it) {
    giveReplica(it->node, gpusOf(*it), shape);
  }
}

bool Pass::enoughFreeGpus(const ShapeInfo& s) const {
  if (s.shape.gpu_count == 0) return true;
  std::int64_t free = 0;
  for (std::size_t m = 0; m < free_by_model_.size(); ++m) {
    if (s.mask[m]) free += free_by_model_[m];
  }
  return free >= s.shape.totalGpuMilli() * s.replicas;
}

// Places on the state with the reservation's resources open again; keeps
// the placement taken only when `keep`.
std::optional<std::vector<NodeChoice>> Pass::placeOpen(const ShapeInfo& s, bool keep) {
  lift();
  auto placed = placeGang(state_, policy_, {s.shape, s.replicas, s.same_label}, rng_);
  if (placed) {
    // Undo through the state and redo through take() to keep the counters exact.
    giveAll(state_, *placed, s.shape);
    if (keep) take(*placed, s.shape);
  }
  hold();
  return placed;
}

void Pass::wait(std::size_t j, WaitReason reason, std::string message, Timestamp estimate) {
  waiting_.push_back({j, reason, std::move(message), estimate});
}

void Pass::buildReleases() {
  releases_.clear();
  for (const auto& r : running_) {
    Release rel;
    rel.shape = r.shape();
    rel.choices = choicesOf(r);
    if (r.job->stopping || r.victim) {
      rel.at = now_;
    } else if (r.job->max_runtime > 0) {
      rel.at = std::max(now_, r.job->started_at + r.job->max_runtime);
    }
    releases_.push_back(std::move(rel));
  }
  releases_.insert(releases_.end(), placed_releases_.begin(), placed_releases_.end());
  sortReleases(releases_);
}

// When a job behind the reservation could start: on the future that
// holds the reservation's resources from its start on.
Timestamp Pass::estimate(ShapeInfo& s) {
  if (s.estimate) return *s.estimate;
  if (!future_ || estimates_ >= config_.estimate_depth) return 0;
  ++estimates_;
  auto r = reserve(*future_, releases_, {s.shape, s.replicas, s.same_label}, policy_, rng_, now_);
  s.estimate = r ? r->start : 0;
  return *s.estimate;
}

bool Pass::tryPreempt(std::size_t j) {
  if (!config_.preemption || preemption_attempts_ >= config_.max_preemption_attempts) return false;
  const JobInfo& job = jobs_[j];
  const PendingJob& p = *job.job;
  const ShapeInfo& s = shapes_[static_cast<std::size_t>(job.shape)];
  const GangRequest gang{s.shape, s.replicas, s.same_label};
  // Candidates: strictly lower priority in the same queue, or reclaim from
  // cohort queues that borrow while this queue stays within nominal, or
  // (borrow_within_cohort) strictly lower priority in cohort queues that
  // borrow.
  const bool in_cohort = job.ledger >= 0 && !ledger_.config(job.ledger).cohort.empty();
  const bool may_reclaim = in_cohort && ledger_.withinNominal(job.ledger, requestOf(job));
  const bool may_borrow_preempt = in_cohort && config_.borrow_within_cohort;
  const auto memo = std::make_tuple(job.queue, p.priority, job.shape);
  if (no_victims_.count(memo)) return false;
  if (running_by_queue_.empty()) {
    running_by_queue_.resize(qs_.size());
    for (std::size_t i = 0; i < running_.size(); ++i) {
      running_by_queue_[static_cast<std::size_t>(running_[i].queue)].push_back(i);
    }
  }
  std::vector<std::size_t> stopping;
  std::vector<std::size_t> cands;
  auto consider = [&](std::size_t i, bool same_queue) {
    const RunInfo& r = running_[i];
    if (r.victim) return;
    if (r.job->stopping) {
      stopping.push_back(i);
      return;
    }
    if ((same_queue || !may_reclaim) && r.job->priority >= p.priority) return;
    // Reclaim that respects priority never stops a job above the preemptor.
    if (config_.reclaim_respects_priority && r.job->priority > p.priority) return;
    VictimInfo v{r.job->id, r.job->priority, r.job->started_at, r.job->last_checkpoint_at,
                 r.job->min_runtime};
    if (!protectedByMinRuntime(v, now_)) cands.push_back(i);
  };
  for (std::size_t q = 0; q < qs_.size() && q < running_by_queue_.size(); ++q) {
    const bool same = static_cast<int>(q) == job.queue;
    const int ledger = qs_[q].ledger;
    const bool cohort = (may_reclaim || may_borrow_preempt) && ledger >= 0 &&
                        ledger_.config(ledger).cohort == ledger_.config(job.ledger).cohort;
    for (std::size_t i : running_by_queue_[q]) {
      if (same || cohort) {
        consider(i, same);
      } else if (running_[i].job->stopping && !running_[i].victim) {
        stopping.push_back(i);
      }
    }
  }
  std::sort(stopping.begin(), stopping.end());
  if (cands.empty() && stopping.empty()) {
    no_victims_.insert(memo);
    return false;
  }
  ++preemption_attempts_;
  {
    // Sorted on copies of what the order reads: a queue may have thousands
    // of candidates, and comparing through pointers into the snapshot
    // missed the cache at every step.
    struct StopKey {
      VictimInfo victim;
      std::size_t run;
    };
    std::vector<StopKey> keys;
    keys.reserve(cands.size());
    for (std::size_t i : cands) {
      const RunningJob& x = *running_[i].job;
      keys.push_back({{x.id, x.priority, x.started_at, x.last_checkpoint_at, x.min_runtime}, i});
    }
    std::stable_sort(keys.begin(), keys.end(), [&](const StopKey& a, const StopKey& b) {
      return stopsBefore(a.victim, b.victim, now_);
    });
    for (std::size_t k = 0; k < keys.size(); ++k) cands[k] = keys[k].run;
  }
  // Reclaim victims count only while their queue borrows what this job
  // needs, counting the victims before them. Only other queues' borrowing
  // is asked, and each queue has its own ledger entry: candidates of the
  // job's own queue never change the answer and stay in the ledger.
  {
    std::vector<std::size_t> kept;
    std::vector<std::size_t> removed;
    for (std::size_t i : cands) {
      RunInfo& r = running_[i];
      if (r.queue != job.queue) {
        bool borrows = false;
        for (const auto& [res, d] : requestOf(job)) {
          if (d > 0 && ledger_.borrowing(r.ledger, res)) borrows = true;
        }
        if (!borrows) continue;
        ledger_.remove(r.ledger, amountsOf(r));
        removed.push_back(i);
      }
      kept.push_back(i);
    }
    for (std::size_t i : removed) ledger_.add(running_[i].ledger, amountsOf(running_[i]));
    cands = std::move(kept);
  }
  auto release = [&](std::size_t i) {
    give(running_[i]);
    ledger_.remove(running_[i].ledger, amountsOf(running_[i]));
  };
  auto restore = [&](std::size_t i) {
    take(running_[i]);
    ledger_.add(running_[i].ledger, amountsOf(running_[i]));
  };
  // Resources of jobs already stopping count as free: they must not cause
  // more preemption.
  for (std::size_t i : stopping) release(i);
  // Whether the preemptor fits with what is released now.
  auto fitsNow = [&]() {
    if (ledger_.check(job.ledger, requestOf(job))) return false;
    auto placed = placeGang(state_, policy_, gang, rng_);
    if (placed) giveAll(state_, *placed, s.shape);
    return placed.has_value();
  };
  std::vector<std::size_t> victims;
  bool ok = false;
  if (!stopping.empty() && fitsNow()) {
    ok = true;
  } else if (!cands.empty()) {
    VictimSearch search;
    search.release = [&](std::size_t k) { release(cands[k]); };
    search.restore = [&](std::size_t k) { restore(cands[k]); };
    search.fits = fitsNow;
    if (auto chosen = chooseVictims(cands.size(), search)) {
      ok = true;
      victims = std::move(*chosen);
    }
  }
  if (!ok) {
    for (auto it = stopping.rbegin(); it != stopping.rend(); ++it) restore(*it);
    hold();
    no_victims_.insert(memo);
    return false;
  }
  // Hold what the preemptor will use: free the victims, take its place,
  // then put the victims (still running) back on top, so nobody else in
  // this pass is given those resources.
  for (std::size_t k : victims) release(cands[k]);
  auto placed = placeGang(state_, policy_, gang, rng_);
  if (placed) {
    giveAll(state_, *placed, s.shape);
    take(*placed, s.shape);
  }
  for (auto it = victims.rbegin(); it != victims.rend(); ++it) restore(cands[*it]);
  for (auto it = stopping.rbegin(); it != stopping.rend(); ++it) restore(*it);
  hold();
  // Victims leave: their quota and share pass to the preemptor now, so the
  // next preemptor in this pass does not stop more for the same quota.
  for (std::size_t k : victims) {
    RunInfo& v = running_[cands[k]];
    ledger_.remove(v.ledger, amountsOf(v));
    qs_[static_cast<std::size_t>(v.queue)].held -= v.held();
    recompute(qs_[static_cast<std::size_t>(v.queue)]);
  }
  if (placed) {
    ResourceAmounts amounts = amountsOf(*placed, s.shape, s.replicas);
    unclaim(jobs_[j]);
    ledger_.add(job.ledger, amounts);
    placed_quota_.push_back({job.ledger, amounts, 0});
    qs_[static_cast<std::size_t>(job.queue)].held += rateOf(s.shape, s.replicas);
    recompute(qs_[static_cast<std::size_t>(job.queue)]);
  }
  int count = static_cast<int>(victims.size());
  if (victims.empty()) {
    // Waiting on jobs stopped earlier: those stopped for it, else those on
    // the nodes it will use.
    std::set<std::size_t> nodes;
    if (placed) {
      for (const auto& c : *placed) nodes.insert(c.node);
    }
    int mine = 0;
    int there = 0;
    for (std::size_t i : stopping) {
      if (running_[i].job->preempted_by == p.id) ++mine;
      for (const RunReplica& c : replicasOf(running_[i])) {
        if (nodes.count(c.node)) {
          ++there;
          break;
        }
      }
    }
    count = mine > 0 ? mine : std::max(there, 1);
  }
  for (std::size_t k : victims) {
    RunInfo& v = running_[cands[k]];
    v.victim = true;
    std::string why;
    if (v.queue == job.queue || !may_reclaim) {
      why = precedenceReason(p.priority, p.service_level, v.job->priority, v.job->service_level);
    } else {
      why = "reclaim for " + describeOwner(ledger_.config(job.ledger));
    }
    out_.preemptions.push_back(
        {v.job->id, p.id, "Preempted by job " + std::to_string(p.id.value()) + " (" + why + ")"});
  }
  wait(j, WaitReason::kPreempting, explainPreempting(count));
  return true;
}

void Pass::admit(std::size_t j) {
  JobInfo& job = jobs_[j];
  const PendingJob& p = *job.job;
  ShapeInfo& s = shapes_[static_cast<std::size_t>(job.shape)];
  QueueState& q = qs_[static_cast<std::size_t>(job.queue)];
  if (auto short_of = ledger_.check(job.ledger, requestOf(job))) {
    if (tryPreempt(j)) return;
    waitQuota(j, *short_of);
    return;
  }
  const bool open = !reservation_ || endsBefore(now_, p.max_runtime, reservation_->start);
  std::optional<std::vector<NodeChoice>> placed;
  if (enoughFreeGpus(s) && !s.failed_open) {
    if (open) {
      placed = placeOpen(s, true);
      if (!placed) s.failed_open = true;
    } else if (!s.failed_blocked) {
      auto g = placeGang(state_, policy_, {s.shape, s.replicas, s.same_label}, rng_);
      if (g) {
        giveAll(state_, *g, s.shape);
        take(*g, s.shape);
        placed = std::move(g);
      } else {
        s.failed_blocked = true;
      }
    }
  } else {
    s.failed_open = true;
  }
  if (placed) {
    ResourceAmounts amounts = amountsOf(*placed, s.shape, s.replicas);
    if (auto short_of = ledger_.check(job.ledger, amounts)) {
      // The GPU model it landed on is over quota (an unpinned selector).
      give(*placed, s.shape);
      waitQuota(j, *short_of);
      return;
    }
    unclaim(job);
    ledger_.add(job.ledger, amounts);
    placed_quota_.push_back({job.ledger, amounts, p.max_runtime > 0 ? now_ + p.max_runtime : 0});
    q.held += rateOf(s.shape, s.replicas);
    recompute(q);
    Placement out{p.id, {}};
    for (const auto& c : *placed) out.replicas.push_back(state_.toPlacement(c, s.shape));
    out_.placements.push_back(std::move(out));
    Release rel;
    rel.at = p.max_runtime > 0 ? now_ + p.max_runtime : 0;
    rel.shape = s.shape;
    rel.choices = std::move(*placed);
    placed_releases_.push_back(std::move(rel));
    return;
  }
  // Blocked by the reservation only?
  unclaim(job);
  if (reservation_ && !open && !s.failed_open) {
    if (!s.fits_open) s.fits_open = placeOpen(s, false).has_value();
    if (*s.fits_open) {
      wait(j, WaitReason::kReserved, explainReserved(s.shape, s.replicas, reserved_job_),
           estimate(s));
      return;
    }
  }
  if (tryPreempt(j)) return;
  Timestamp start = 0;
  if (config_.backfill && !reservation_ && reservation_attempts_ < 3) {
    // EASY: the first job that cannot start holds its future resources.
    ++reservation_attempts_;
    buildReleases();
    ClusterState future = state_;
    auto r = reserve(future, releases_, {s.shape, s.replicas, s.same_label}, policy_, rng_, now_);
    if (r) {
      reservation_ = std::move(*r);
      reserved_shape_ = job.shape;
      reserved_job_ = p.id;
      start = reservation_->start;
      ReservationInfo info{p.id, start, {}};
      for (const auto& c : reservation_->choices) {
        info.replicas.push_back(state_.toPlacement(c, s.shape));
      }
      out_.reservation = std::move(info);
      hold();
      if (config_.estimate_depth > 0) {
        // Later estimates see the reservation held from now until its job
        // ends (never, without max_runtime).
        future_.emplace(std::move(future));
        takeAll(*future_, reservation_->choices, s.shape);
        Release own;
        own.at = start > 0 && p.max_runtime > 0 ? start + p.max_runtime : 0;
        own.shape = s.shape;
        own.choices = reservation_->choices;
        releases_.push_back(std::move(own));
        sortReleases(releases_);
      }
      wait(j, WaitReason::kCapacity, "", start);
      return;
    }
  }
  wait(j, WaitReason::kCapacity, "", reservation_ ? estimate(s) : 0);
}

void Pass::finish(Decision& d) {
  // Messages describe what is really free: the reservation's hold is lifted.
  lift();
  for (auto& w : waiting_) {
    const JobInfo& job = jobs_[w.job];
    QueueState& q = qs_[static_cast<std::size_t>(job.queue)];
    ShapeInfo& s = shapes_[static_cast<std::size_t>(job.shape)];
    if (w.message.empty()) {
      if (s.capacity_message.empty()) {
        s.capacity_message = explainCapacity(state_, s.shape, s.replicas);
      }
      w.message = s.capacity_message;
    }
    Explanation e;
    e.job = job.job->id;
    e.position = ++q.waiting;
    e.message = std::move(w.message);
    e.estimated_start = w.estimate;
    e.reason = w.reason;
    e.queue = q.name;
    d.waiting.push_back(std::move(e));
  }
}

Decision Pass::run() {
  indexCluster();
  loadRunning();
  loadPending();
  for (std::size_t j = nextJob(); j < jobs_.size(); j = nextJob()) {
    claim(jobs_[j].job->priority);
    admit(j);
  }
  finish(out_);
  return std::move(out_);
}

}  // namespace

const char* waitReasonName(WaitReason r) {
  switch (r) {
    case WaitReason::kCapacity:
      return "capacity";
    case WaitReason::kQuota:
      return "quota";
    case WaitReason::kReserved:
      return "reserved";
    case WaitReason::kPreempting:
      return "preempting";
  }
  return "capacity";
}

Decision schedule(const ClusterSnapshot& cluster, const QueueSnapshot& queues,
                  const PolicyConfig& config, Timestamp now, Rng& rng) {
  std::unique_ptr<PlacementPolicy> owned;
  PlacementPolicy* policy = config.placement;
  if (!policy) {
    owned = builtinBestFit();
    policy = owned.get();
  }
  return Pass(cluster, queues, config, now, *policy, rng).run();
}

namespace {

std::string gpuWord(std::int64_t n) { return n == 1 ? "GPU" : "GPUs"; }

std::string typeSuffix(const Resources& r) {
  if (r.gpu_types.empty()) return "";
  std::string out = " of type ";
  for (size_t i = 0; i < r.gpu_types.size(); ++i) {
    if (i) out += " or ";
    out += r.gpu_types[i];
  }
  return out;
}

}  // namespace

Status checkFeasible(const JobSpec& spec, const std::vector<NodeInfo>& nodes) {
  // Capacity, not health: a job that needs a GPU that is unhealthy now
  // waits for it rather than being refused.
  ClusterSnapshot empty;
  for (const auto& n : nodes) {
    NodeState state{n, {}, Quantity(), 0};
    for (auto& g : state.info.gpus) g.healthy = true;
    empty.nodes.push_back(std::move(state));
  }
  {
    ClusterState free(empty);
    auto policy = builtinBestFit();
    Rng rng(0);
    GangRequest gang{shapeOf(spec.resources, spec.node_selector), spec.replicas, spec.same_label};
    if (placeGang(free, *policy, gang, rng)) return Status::ok();
  }

  const Resources& r = spec.resources;
  std::int64_t g = r.gpus.wholeUnits();
  std::int64_t largest = 0;
  std::int64_t matching = 0;
  std::set<std::string> models;
  for (const auto& n : nodes) {
    std::int64_t count = 0;
    for (const auto& gpu : n.gpus) {
      models.insert(gpu.model);
      if (gpuModelMatches(r.gpu_types, gpu.model)) ++count;
    }
    largest = std::max(largest, count);
    matching += count;
  }
  if (!r.gpu_types.empty() && matching == 0 && !r.gpus.isZero()) {
    std::string have;
    for (const auto& m : models) have += (have.empty() ? "" : ", ") + m;
    return Status::infeasible("no node has GPUs" + typeSuffix(r) +
                                  " (GPU models here: " + (have.empty() ? "none" : have) + ")",
                              "resources.gpu_type");
  }
  if (g > largest) {
    return Status::infeasible("needs " + std::to_string(g) + " " + gpuWord(g) + typeSuffix(r) +
                                  " per replica; the largest node has " + std::to_string(largest),
                              "resources.gpus");
  }
  Quantity max_cpus;
  std::int64_t max_mem = 0;
  for (const auto& n : nodes) {
    max_cpus = std::max(max_cpus, n.cpus);
    max_mem = std::max(max_mem, n.memory_bytes);
  }
  if (r.cpus > max_cpus) {
    return Status::infeasible("needs " + r.cpus.toString() +
                                  " CPUs per replica; the largest node has " + max_cpus.toString(),
                              "resources.cpus");
  }
  if (r.memory_bytes > max_mem) {
    return Status::infeasible("needs " + formatMemory(r.memory_bytes) +
                                  " per replica; the largest node has " + formatMemory(max_mem),
                              "resources.memory");
  }
  if (!spec.node_selector.empty()) {
    bool any = false;
    for (const auto& n : nodes) {
      bool ok = true;
      for (const auto& [k, v] : spec.node_selector) {
        auto it = n.labels.find(k);
        if (it == n.labels.end() || it->second != v) ok = false;
      }
      any = any || ok;
    }
    if (!any) return Status::infeasible("no node has all the labels asked for", "node_selector");
  }
  if (!spec.same_label.empty() && spec.replicas > 1) {
    return Status::infeasible("needs " + std::to_string(spec.replicas) + " replicas of " +
                                  std::to_string(g) + " " + gpuWord(g) + typeSuffix(r) +
                                  " on nodes sharing one value of label " + spec.same_label +
                                  "; no such group of nodes is large enough",
                              "same_label");
  }
  return Status::infeasible("needs " + std::to_string(spec.replicas) + " replicas of " +
                                std::to_string(g) + " " + gpuWord(g) + typeSuffix(r) +
                                "; the cluster has " + std::to_string(matching) +
                                " such GPUs in all",
                            "replicas");
}

Status checkQuota(const JobSpec& spec, const PolicyConfig& config,
                  const std::vector<NodeInfo>& nodes) {
  QuotaLedger ledger(config.queues);
  int q = resolveQueue(ledger, config.queues, spec.queue, spec.project);
  if (q < 0) return Status::ok();
  std::set<std::string> models;
  for (const auto& n : nodes) {
    for (const auto& g : n.gpus) models.insert(g.model);
  }
  ReplicaShape shape = shapeOf(spec.resources, spec.node_selector);
  ResourceAmounts per_replica =
      requestAmounts(shape, 1, pinnedModelKeys(shape.gpu_types, ledger.gpuModelKeys(), models));
  return checkQuotaCeiling(ledger, q, per_replica, spec.replicas);
}

const char* jobOrderName(JobOrder o) {
  return o == JobOrder::kLeastAttainedService ? "least-attained-service" : "fair-share";
}

std::optional<JobOrder> parseJobOrder(std::string_view name) {
  for (JobOrder o : {JobOrder::kFairShare, JobOrder::kLeastAttainedService}) {
    if (name == jobOrderName(o)) return o;
  }
  return std::nullopt;
}

PendingJob pendingJobOf(const Job& job) {
  PendingJob p{job.id, job.spec.priority, job.created_at, job.spec.resources, job.spec.replicas};
  p.queue = job.spec.queue;
  p.project = job.spec.project;
  p.user = job.user;
  p.node_selector = job.spec.node_selector;
  p.same_label = job.spec.same_label;
  p.max_runtime = job.spec.max_runtime;
  p.min_runtime = job.spec.min_runtime;
  return p;
}

RunningJob runningJobOf(const Job& job, const Attempt& attempt) {
  RunningJob r;
  r.id = job.id;
  r.queue = job.spec.queue;
  r.project = job.spec.project;
  r.priority = job.spec.priority;
  r.per_replica = job.spec.resources;
  r.replicas = attempt.replicas;
  r.started_at = attempt.started_at > 0 ? attempt.started_at : attempt.created_at;
  r.max_runtime = job.spec.max_runtime;
  r.min_runtime = job.spec.min_runtime;
  r.stopping = job.preempt_requested_at > 0 || job.cancel_requested_at > 0;
  r.preempted_by = job.preempted_by;
  return r;
}

std::map<std::string, ResourceRate> heldByQueue(const std::vector<RunningJob>& running) {
  std::map<std::string, ResourceRate> out;
  for (const auto& r : running) {
    ResourceRate rate;
    for (const auto& p : r.replicas) {
      rate.gpu += static_cast<double>(p.gpu_milli) * static_cast<double>(p.gpus.size());
    }
    const auto n = static_cast<double>(r.replicas.size());
    rate.cpu = static_cast<double>(r.per_replica.cpus.milli()) * n;
    rate.memory = static_cast<double>(r.per_replica.memory_bytes) * n;
    out[r.queue.empty() ? r.project : r.queue] += rate;
  }
  return out;
}

}  // namespace ty
