#include "sim/job_replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

namespace ty {

const char* estimateModeName(EstimateMode m) {
  return m == EstimateMode::kFactor ? "factor" : "none";
}

Result<ReplayInput> makeReplayInput(const std::vector<TraceJob>& trace, const InputOptions& opts) {
  if (opts.nodes < 1 || opts.gpus_per_node < 1) {
    return Status::invalidArgument("the cluster needs at least one node and one GPU per node");
  }
  ReplayInput in;
  in.nodes = opts.nodes;
  in.gpus_per_node = opts.gpus_per_node;
  in.estimate = opts.estimate;
  // Estimates come from their own generator so that every policy of one
  // invocation sees the same ones.
  Rng rng(opts.seed);
  std::map<std::string, int> queue_index;
  std::vector<double> gpu_time;
  for (const TraceJob& t : trace) {
    if (t.gpus > in.capacity()) {
      ++in.skipped_too_large;
      continue;
    }
    SimJob j;
    j.id = JobId(static_cast<std::int64_t>(in.jobs.size()) + 1);
    auto [it, added] = queue_index.emplace(t.queue, static_cast<int>(in.queues.size()));
    if (added) {
      in.queues.push_back({t.queue, 0, 0});
      gpu_time.push_back(0);
    }
    j.queue = it->second;
    j.submitted = t.submitted;
    j.duration = t.duration;
    j.gpus = t.gpus;
    // The fewest replicas of equal size that fit a node: 12 GPUs on 8-GPU
    // nodes are 2 x 6, 24 are 3 x 8.
    int r = (t.gpus + opts.gpus_per_node - 1) / opts.gpus_per_node;
    while (t.gpus % r != 0) ++r;
    j.replicas = r;
    j.gpus_per_replica = t.gpus / r;
    if (opts.estimate == EstimateMode::kFactor) {
      const double u = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;  // [0, 1)
      j.estimate =
          std::max<DurationMs>(1, std::llround(static_cast<double>(t.duration) * (1.0 + 2.0 * u)));
    }
    gpu_time[static_cast<std::size_t>(j.queue)] +=
        static_cast<double>(t.duration) * static_cast<double>(t.gpus);
    in.jobs.push_back(j);
  }
  double total = 0;
  for (double g : gpu_time) total += g;
  const int n = static_cast<int>(in.queues.size());
  for (int q = 0; q < n; ++q) {
    QueueInfo& info = in.queues[static_cast<std::size_t>(q)];
    info.gpu_time_share = total > 0 ? gpu_time[static_cast<std::size_t>(q)] / total : 0;
    const double share = opts.quota == QuotaMode::kEqual ? 1.0 / n : info.gpu_time_share;
    // At least one GPU so that every VC can run something within quota.
    info.quota_gpus = std::max(1, static_cast<int>(std::lround(share * in.capacity())));
  }
  return in;
}

std::int64_t ReplayState::attainedGpuMs(JobId id) const { return runTime(id) * job(id).gpus; }

DurationMs ReplayState::runTime(JobId id) const {
  const JobRun& r = run(id);
  DurationMs t = r.run_time_before;
  if (r.phase == JobPhase::kRunning) t += now_ - r.run_start;
  return t;
}

Timestamp ReplayState::lastCheckpointAt(JobId id) const {
  const JobRun& r = run(id);
  if (checkpoint_interval_ <= 0 || r.phase != JobPhase::kRunning) return 0;
  const DurationMs work = std::max<DurationMs>(0, now_ - r.run_start - r.run_overhead);
  const DurationMs saved = (r.done + work) / checkpoint_interval_ * checkpoint_interval_;
  if (saved <= r.done) return r.run_start;
  return r.run_start + r.run_overhead + (saved - r.done);
}

std::vector<int> ReplayState::freePerNode() const {
  std::vector<int> out;
  out.reserve(owners_.size());
  for (const auto& node : owners_) {
    out.push_back(static_cast<int>(std::count(node.begin(), node.end(), 0)));
  }
  return out;
}

std::optional<std::vector<int>> planGang(std::vector<int>& free, int replicas,
                                         int gpus_per_replica) {
  std::vector<int> nodes;
  nodes.reserve(static_cast<std::size_t>(replicas));
  for (int r = 0; r < replicas; ++r) {
    int best = -1;
    for (int n = 0; n < static_cast<int>(free.size()); ++n) {
      const int f = free[static_cast<std::size_t>(n)];
      if (f >= gpus_per_replica && (best < 0 || f < free[static_cast<std::size_t>(best)])) {
        best = n;
      }
    }
    if (best < 0) {
      for (int n : nodes) free[static_cast<std::size_t>(n)] += gpus_per_replica;
      return std::nullopt;
    }
    free[static_cast<std::size_t>(best)] -= gpus_per_replica;
    nodes.push_back(best);
  }
  return nodes;
}

GangStart gangOn(JobId job, const std::vector<int>& nodes) {
  GangStart g{job, {}};
  for (int n : nodes) g.slots.push_back({n, {}});
  return g;
}

// Runs one replay; owns the ReplayState it hands to the policy.
class ReplayEngine {
 public:
  ReplayEngine(const ReplayInput& input, ReplayPolicy& policy, const ReplayOptions& options)
      : input_(input), policy_(policy), options_(options), rng_(options.seed) {
    s_.input_ = &input;
    s_.checkpoint_interval_ = options.checkpoint_interval;
    s_.runs_.resize(input.jobs.size());
    s_.owners_.assign(static_cast<std::size_t>(input.nodes),
                      std::vector<std::int64_t>(static_cast<std::size_t>(input.gpus_per_node), 0));
  }

  Result<ReplayResult> run(const ReplayObserver& observer) {
    ReplayResult result;
    result.policy = std::string(policy_.name());
    const auto& jobs = input_.jobs;
    if (jobs.empty()) return result;
    s_.now_ = jobs.front().submitted;
    result.first_submit = s_.now_;
    std::size_t next_arrival = 0;
    std::size_t done = 0;
    // A policy that keeps preempting and restarting the same jobs can make
    // events without progress; far more events than jobs means a livelock.
    const std::int64_t max_events = 1000 * static_cast<std::int64_t>(jobs.size()) + 100'000;
    while (true) {
      if (++result.events > max_events) {
        return Status::internal("policy " + result.policy + " made no progress after " +
                                std::to_string(max_events) + " events (" + std::to_string(done) +
                                " of " + std::to_string(jobs.size()) +
                                " jobs done): it keeps preempting and restarting jobs");
      }
      // Completions first, so their GPUs are free for this decision.
      for (std::size_t i = 0; i < s_.running_.size();) {
        const JobId id = s_.running_[i];
        if (completionTime(id) <= s_.now_) {
          finish(id);
          ++done;
        } else {
          ++i;
        }
      }
      while (next_arrival < jobs.size() && jobs[next_arrival].submitted <= s_.now_) {
        const JobId id = jobs[next_arrival].id;
        s_.runs_[ReplayState::index(id)].phase = JobPhase::kPending;
        s_.runs_[ReplayState::index(id)].pending_since = s_.now_;
        s_.pending_.push_back(id);  // arrivals come in id order: stays sorted
        ++next_arrival;
      }
      if (!s_.pending_.empty()) {
        ReplayActions actions = policy_.decide(s_, rng_);
        TY_RETURN_IF_ERROR(apply(actions));
      }
      policy_.afterEvent(s_);
      if (observer) observer(s_);
      if (done == jobs.size()) break;

      Timestamp next = std::numeric_limits<Timestamp>::max();
      if (next_arrival < jobs.size()) next = jobs[next_arrival].submitted;
      for (JobId id : s_.running_) next = std::min(next, completionTime(id));
      if (!s_.pending_.empty()) {
        if (auto w = policy_.wakeup(s_); w && *w > s_.now_) next = std::min(next, *w);
      }
      if (next == std::numeric_limits<Timestamp>::max()) {
        return Status::internal("policy " + result.policy + " left " +
                                std::to_string(s_.pending_.size()) +
                                " jobs pending on an idle cluster at " + formatTimestamp(s_.now_));
      }
      s_.now_ = std::max(next, s_.now_);
    }
    for (const SimJob& j : jobs) {
      const JobRun& r = s_.runs_[ReplayState::index(j.id)];
      JobOutcome o;
      o.id = j.id;
      o.queue = j.queue;
      o.gpus = j.gpus;
      o.submitted = j.submitted;
      o.first_start = r.first_start;
      o.finished = r.finished;
      o.duration = j.duration;
      o.estimate = j.estimate;
      o.run_time = r.run_time_before;
      o.lost_work = r.lost_work;
      o.overhead = r.overhead;
      o.preemptions = r.preemptions;
      result.last_finish = std::max(result.last_finish, r.finished);
      result.preemptions += r.preemptions;
      result.busy_gpu_ms += o.run_time * j.gpus;
      result.jobs.push_back(o);
    }
    return result;
  }

 private:
  Timestamp completionTime(JobId id) const {
    const JobRun& r = s_.run(id);
    return r.run_start + r.run_overhead + (s_.job(id).duration - r.done);
  }

  void release(JobId id, JobRun& r) {
    for (const ReplicaSlot& slot : r.slots) {
      for (int g : slot.gpus) s_.owners_[static_cast<std::size_t>(slot.node)][g] = 0;
    }
    r.slots.clear();
    s_.running_.erase(std::find(s_.running_.begin(), s_.running_.end(), id));
  }

  void finish(JobId id) {
    JobRun& r = s_.runs_[ReplayState::index(id)];
    r.run_time_before += s_.now_ - r.run_start;
    r.overhead += r.run_overhead;
    r.done = s_.job(id).duration;
    r.finished = s_.now_;
    r.phase = JobPhase::kDone;
    release(id, r);
  }

  Status preempt(JobId id) {
    JobRun& r = s_.runs_[ReplayState::index(id)];
    if (r.phase != JobPhase::kRunning) {
      return Status::internal("policy " + std::string(policy_.name()) + " preempted job " +
                              std::to_string(id.value()) + ", which is not running");
    }
    const DurationMs elapsed = s_.now_ - r.run_start;
    const DurationMs overhead = std::min(elapsed, r.run_overhead);
    const DurationMs total = r.done + (elapsed - overhead);
    // Work since the last checkpoint is lost; without checkpoints all of it.
    DurationMs kept = 0;
    if (options_.checkpoint_interval > 0) {
      kept = std::max(r.done, total / options_.checkpoint_interval * options_.checkpoint_interval);
    }
    r.lost_work += total - kept;
    r.done = kept;
    r.overhead += overhead;
    r.run_time_before += elapsed;
    ++r.preemptions;
    r.phase = JobPhase::kPending;
    r.pending_since = s_.now_;
    release(id, r);
    s_.pending_.insert(std::lower_bound(s_.pending_.begin(), s_.pending_.end(), id), id);
    return Status::ok();
  }

  Status start(const GangStart& g) {
    const std::string who =
        "policy " + std::string(policy_.name()) + ": job " + std::to_string(g.job.value()) + ": ";
    if (g.job.value() < 1 || g.job.value() > static_cast<std::int64_t>(input_.jobs.size())) {
      return Status::internal(who + "no such job");
    }
    JobRun& r = s_.runs_[ReplayState::index(g.job)];
    const SimJob& j = s_.job(g.job);
    if (r.phase != JobPhase::kPending) return Status::internal(who + "started but not pending");
    // Whole gangs only: every replica, each with its full share of GPUs.
    if (static_cast<int>(g.slots.size()) != j.replicas) {
      return Status::internal(who + "partial gang: " + std::to_string(g.slots.size()) + " of " +
                              std::to_string(j.replicas) + " replicas");
    }
    std::vector<ReplicaSlot> slots = g.slots;
    for (ReplicaSlot& slot : slots) {
      if (slot.node < 0 || slot.node >= input_.nodes) return Status::internal(who + "bad node");
      auto& node = s_.owners_[static_cast<std::size_t>(slot.node)];
      if (slot.gpus.empty()) {
        for (int k = 0;
             k < input_.gpus_per_node && static_cast<int>(slot.gpus.size()) < j.gpus_per_replica;
             ++k) {
          if (node[static_cast<std::size_t>(k)] == 0) slot.gpus.push_back(k);
        }
      }
      if (static_cast<int>(slot.gpus.size()) != j.gpus_per_replica) {
        return Status::internal(who + "replica needs " + std::to_string(j.gpus_per_replica) +
                                " GPUs on node " + std::to_string(slot.node) + ", got " +
                                std::to_string(slot.gpus.size()));
      }
      for (int k : slot.gpus) {
        if (k < 0 || k >= input_.gpus_per_node || node[static_cast<std::size_t>(k)] != 0) {
          return Status::internal(who + "GPU " + std::to_string(k) + " on node " +
                                  std::to_string(slot.node) + " is not free");
        }
        node[static_cast<std::size_t>(k)] = g.job.value();
      }
    }
    r.slots = std::move(slots);
    r.phase = JobPhase::kRunning;
    r.run_start = s_.now_;
    r.run_overhead = r.preemptions > 0 ? options_.restart_overhead : 0;
    if (r.first_start < 0) r.first_start = s_.now_;
    s_.pending_.erase(std::find(s_.pending_.begin(), s_.pending_.end(), g.job));
    s_.running_.push_back(g.job);
    return Status::ok();
  }

  Status apply(const ReplayActions& actions) {
    for (JobId id : actions.preempt) TY_RETURN_IF_ERROR(preempt(id));
    for (const GangStart& g : actions.start) TY_RETURN_IF_ERROR(start(g));
    return Status::ok();
  }

  const ReplayInput& input_;
  ReplayPolicy& policy_;
  ReplayOptions options_;
  Rng rng_;
  ReplayState s_;
};

Result<ReplayResult> runReplay(const ReplayInput& input, ReplayPolicy& policy,
                               const ReplayOptions& options, const ReplayObserver& observer) {
  ReplayEngine engine(input, policy, options);
  return engine.run(observer);
}

}  // namespace ty
