// The Trainyard scheduler in the replay: every decision is the core's pure
// schedule() on a snapshot of the simulated cluster, exactly as the server
// calls it (cluster, pending and running jobs, decayed queue usage in;
// Decision out). Placements start gangs on the GPUs the core picked, and
// the engine checks gang and capacity invariants on them at every event.
// Preemptions stop their victims the way the server does: a victim keeps
// its GPUs for the stop grace period (PolicyOptions::stop_grace, the
// JobSpec default of 30 s), shown to the core as `stopping` with
// `preempted_by`, and only then leaves; the policy wakes up at that time
// so the core can place the preemptor.
//
// What the core is given (docs/simulator.md, "Job replay"):
//   - one queue per VC, all in one cohort "philly": nominal GPU quota from
//     ReplayInput (GPU-time share or equal), unlimited borrowing, all of it
//     lendable; fair-share weight = nominal quota;
//   - max_runtime = the user's estimate less work already kept, so EASY
//     backfill can plan (0 without estimates);
//   - min_runtime from PolicyOptions; last checkpoint times from the engine.
// With service levels (core/service_levels.h: `trainyard` by remaining
// estimate, `trainyard-las` by attained service) the priorities in the
// snapshot carry the level, so the core's priority order and its priority
// preemption act on them; the core's borrow_within_cohort lets levels
// preempt across VCs that borrow, not only within one.
#include <algorithm>
#include <map>
#include <string>

#include "core/fair_share.h"
#include "core/schedule.h"
#include "core/service_levels.h"
#include "sim/job_policies.h"

namespace ty {
namespace {

constexpr const char* kCohort = "philly";

class TrainyardPolicy : public ReplayPolicy {
 public:
  TrainyardPolicy(const PolicyOptions& o, const TrainyardVariant& v) : options_(o), name_(v.name) {
    // Everything not set below is the core's default, as the server runs
    // it: among them borrow_within_cohort (a job of a higher level may stop
    // one of a lower level in another VC while that VC borrows, as
    // Tiresias preempts across the whole cluster) and
    // reclaim_respects_priority (reclaim never inverts levels).
    levels_.kind = v.levels;
    levels_.las_threshold_gpu_ms = o.las_threshold_gpu_ms;
    config_.backfill = o.backfill;
    config_.preemption = o.preemption;
    config_.order = v.order;
    if (o.fair_share_half_life > 0) config_.fair_share_half_life = o.fair_share_half_life;
  }
  std::string_view name() const override { return name_; }

  ReplayActions decide(const ReplayState& state, Rng& rng) override {
    if (base_.nodes.empty()) setUp(state.input());
    accumulate(state.now());
    ClusterSnapshot cluster = base_;
    const auto& owners = state.owners();
    for (std::size_t n = 0; n < owners.size(); ++n) {
      for (std::size_t g = 0; g < owners[n].size(); ++g) {
        if (owners[n][g] != 0) cluster.nodes[n].gpu_used_milli[static_cast<int>(g)] = 1000;
      }
    }
    QueueSnapshot queues;
    queues.usage = usage_;
    queues.pending.reserve(state.pending().size());
    for (JobId id : state.pending()) {
      const SimJob& j = state.job(id);
      const JobRun& r = state.run(id);
      PendingJob p;
      p.id = id;
      p.submitted = j.submitted;
      p.per_replica.gpus = Quantity::whole(j.gpus_per_replica);
      p.replicas = j.replicas;
      p.queue = queueName(j);
      p.project = p.queue;
      p.max_runtime = remainingEstimate(j, r, state);
      p.min_runtime = options_.min_runtime;
      p.attained_service = state.attainedGpuMs(id);
      queues.pending.push_back(std::move(p));
    }
    queues.running.reserve(state.running().size());
    ReplayActions out;
    // Victims whose grace period is over leave before this pass.
    for (auto it = stopping_.begin(); it != stopping_.end();) {
      if (state.run(it->first).phase != JobPhase::kRunning) {
        it = stopping_.erase(it);  // it ended by itself while stopping
      } else if (it->second.at <= state.now()) {
        out.preempt.push_back(it->first);
        for (const ReplicaSlot& slot : state.run(it->first).slots) {
          for (int g : slot.gpus) {
            cluster.nodes[static_cast<std::size_t>(slot.node)].gpu_used_milli.erase(g);
          }
        }
        it = stopping_.erase(it);
      } else {
        ++it;
      }
    }
    for (JobId id : state.running()) {
      if (std::find(out.preempt.begin(), out.preempt.end(), id) != out.preempt.end()) continue;
      const SimJob& j = state.job(id);
      const JobRun& r = state.run(id);
      RunningJob rj;
      rj.id = id;
      rj.queue = queueName(j);
      rj.project = rj.queue;
      rj.per_replica.gpus = Quantity::whole(j.gpus_per_replica);
      for (const ReplicaSlot& slot : r.slots) {
        rj.replicas.push_back(
            {base_.nodes[static_cast<std::size_t>(slot.node)].info.name, slot.gpus, 1000});
      }
      rj.started_at = r.run_start;
      rj.attained_service = static_cast<std::int64_t>(r.run_time_before) * j.gpus;
      rj.max_runtime = remainingEstimate(j, r, state);
      rj.min_runtime = options_.min_runtime;
      rj.last_checkpoint_at = state.lastCheckpointAt(id);
      if (auto st = stopping_.find(id); st != stopping_.end()) {
        rj.stopping = true;
        rj.preempted_by = st->second.preemptor;
      }
      queues.running.push_back(std::move(rj));
    }

    applyServiceLevels(queues, levels_, state.now());
    Decision d = schedule(cluster, queues, config_, state.now(), rng);
    for (const Preemption& p : d.preemptions) {
      stopping_.emplace(p.victim, Stop{p.preemptor, state.now() + options_.stop_grace});
    }
    for (const Placement& p : d.placements) {
      GangStart g{p.job, {}};
      for (const ReplicaPlacement& r : p.replicas) {
        auto it = node_index_.find(r.node);
        // An unknown node name is left as -1 for the engine to reject.
        g.slots.push_back({it == node_index_.end() ? -1 : it->second, r.gpus});
      }
      out.start.push_back(std::move(g));
    }
    return out;
  }

  // The next victim to finish stopping; with LAS levels also, as Tiresias,
  // the next running job to cross the threshold while a job of the high
  // level waits (it becomes a victim then).
  std::optional<Timestamp> wakeup(const ReplayState& state) const override {
    std::optional<Timestamp> next;
    for (const auto& [id, stop] : stopping_) {
      if (!next || stop.at < *next) next = stop.at;
    }
    if (levels_.kind != ServiceLevels::kLeastAttained) return next;
    bool high_waiting = false;
    for (JobId id : state.pending()) {
      high_waiting = high_waiting || state.attainedGpuMs(id) < options_.las_threshold_gpu_ms;
    }
    if (!high_waiting) return next;
    for (JobId id : state.running()) {
      const std::int64_t left = options_.las_threshold_gpu_ms - state.attainedGpuMs(id);
      if (left <= 0) continue;
      const int gpus = std::max(1, state.job(id).gpus);
      const Timestamp t = state.now() + (left + gpus - 1) / gpus;
      if (!next || t < *next) next = t;
    }
    return next;
  }

  void afterEvent(const ReplayState& state) override {
    if (base_.nodes.empty()) setUp(state.input());
    accumulate(state.now());
    // What each queue holds until the next event.
    held_.clear();
    for (JobId id : state.running()) {
      const SimJob& j = state.job(id);
      held_[queueName(j)].gpu += 1000.0 * j.gpus;
    }
    // A victim that ended by itself while stopping needs no stop.
    for (auto it = stopping_.begin(); it != stopping_.end();) {
      if (state.run(it->first).phase != JobPhase::kRunning) {
        it = stopping_.erase(it);
      } else {
        ++it;
      }
    }
  }

 private:
  void setUp(const ReplayInput& in) {
    for (int n = 0; n < in.nodes; ++n) {
      NodeState s;
      s.info.name = "node" + std::to_string(n);
      for (int g = 0; g < in.gpus_per_node; ++g) {
        s.info.gpus.push_back({g, s.info.name + "-gpu" + std::to_string(g), "P100", 0, true});
      }
      node_index_.emplace(s.info.name, n);
      base_.nodes.push_back(std::move(s));
    }
    queue_names_.clear();
    for (const QueueInfo& q : in.queues) {
      queue_names_.push_back(q.name);
      if (!options_.queues) continue;
      QueueConfig c;
      c.name = q.name;
      c.project = q.name;
      c.cohort = kCohort;
      c.weight = q.quota_gpus;
      c.quotas["gpu"] = Quota::units(q.quota_gpus);
      config_.queues.push_back(std::move(c));
    }
  }

  const std::string& queueName(const SimJob& j) const {
    return queue_names_[static_cast<std::size_t>(j.queue)];
  }

  // The user's estimate less the work a restart keeps, plus its overhead:
  // what a resubmission with a checkpoint would ask for.
  static DurationMs remainingEstimate(const SimJob& j, const JobRun& r, const ReplayState& state) {
    (void)state;
    if (j.estimate <= 0) return 0;
    return std::max<DurationMs>(1, j.estimate - r.done + r.run_overhead);
  }

  // Advances the queues' decayed usage to `now` with what they held since
  // the last event.
  void accumulate(Timestamp now) {
    if (now > usage_at_) {
      for (const auto& [queue, rate] : held_) {
        usage_[queue] =
            accumulateUsage(usage_[queue], rate, now - usage_at_, config_.fair_share_half_life);
      }
      // Queues holding nothing still decay.
      for (auto& [queue, u] : usage_) {
        if (!held_.count(queue)) {
          u = decayUsage(u, now - usage_at_, config_.fair_share_half_life);
        }
      }
    }
    usage_at_ = now;
  }

  PolicyOptions options_;
  std::string name_;
  ServiceLevelConfig levels_;
  PolicyConfig config_;
  ClusterSnapshot base_;
  std::map<std::string, int> node_index_;
  std::vector<std::string> queue_names_;
  std::map<std::string, DecayedUsage> usage_;
  std::map<std::string, ResourceRate> held_;
  Timestamp usage_at_ = 0;
  struct Stop {
    JobId preemptor;
    Timestamp at = 0;  // when the victim has stopped
  };
  std::map<JobId, Stop> stopping_;
};

}  // namespace

const std::vector<TrainyardVariant>& trainyardVariants() {
  static const std::vector<TrainyardVariant> variants = {
      // The server's defaults: shortest-remaining levels, fair share within
      // a level, levels preempt across VCs that borrow.
      {"trainyard", ServiceLevelConfig{}.kind, PolicyConfig{}.order},
      // Two-level least attained service, least served first within a level.
      {"trainyard-las", ServiceLevels::kLeastAttained, JobOrder::kLeastAttainedService},
      // Fair share alone: no levels.
      {"trainyard-fair-share", ServiceLevels::kNone, JobOrder::kFairShare},
  };
  return variants;
}

std::unique_ptr<ReplayPolicy> makeTrainyardPolicy(const PolicyOptions& options,
                                                  const TrainyardVariant& variant) {
  return std::make_unique<TrainyardPolicy>(options, variant);
}

}  // namespace ty
