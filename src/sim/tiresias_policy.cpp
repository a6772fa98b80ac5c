// Tiresias, discretised two-dimensional least-attained-service (Gu et al.,
// "Tiresias: A GPU Cluster Manager for Distributed Deep Learning",
// NSDI'19), with two queues:
//   - a job's attained service is GPUs x time it has run (both dimensions);
//     below the threshold it is in the high queue, at or above it in the
//     low queue. No run-time estimate is read.
//   - jobs are taken high queue first, FIFO (submission order) within a
//     queue; a pending job that fits starts (later jobs may start when an
//     earlier one does not fit).
//   - a pending high-queue job that does not fit preempts running jobs of
//     the low queue, lowest priority first, as many as it needs and only if
//     that makes the whole gang fit. Jobs of the same queue never preempt
//     each other, which keeps demoted jobs from thrashing.
//   - optional starvation promotion (the paper's STARVELIMIT): a low-queue
//     job pending for at least `starvation_factor` x its run time so far
//     counts as high-queue again. Checked at events only.
// The policy asks to be woken when a running high-queue job will cross the
// threshold while a high-queue job waits, so demotion takes effect on time.
#include <algorithm>

#include "sim/job_policies.h"

namespace ty {
namespace {

class TiresiasPolicy : public ReplayPolicy {
 public:
  explicit TiresiasPolicy(const PolicyOptions& o) : options_(o) {}
  std::string_view name() const override { return "tiresias"; }

  ReplayActions decide(const ReplayState& state, Rng& /*rng*/) override {
    std::vector<JobId> order = state.running();
    order.insert(order.end(), state.pending().begin(), state.pending().end());
    std::vector<int> level(state.input().jobs.size() + 1, 0);
    for (JobId id : order) level[static_cast<std::size_t>(id.value())] = levelOf(state, id);
    auto before = [&](JobId a, JobId b) {
      const int la = level[static_cast<std::size_t>(a.value())];
      const int lb = level[static_cast<std::size_t>(b.value())];
      if (la != lb) return la < lb;
      return a < b;  // ids are submission order
    };
    std::sort(order.begin(), order.end(), before);

    // Running jobs that may be preempted, lowest priority first.
    std::vector<JobId> victims;
    for (auto it = order.rbegin(); it != order.rend(); ++it) {
      if (state.run(*it).phase == JobPhase::kRunning) victims.push_back(*it);
    }

    ReplayActions out;
    std::vector<int> free = state.freePerNode();
    std::vector<bool> preempted(level.size(), false);
    for (JobId id : order) {
      if (state.run(id).phase != JobPhase::kPending) continue;
      const SimJob& j = state.job(id);
      if (auto nodes = planGang(free, j.replicas, j.gpus_per_replica)) {
        out.start.push_back(gangOn(id, *nodes));
        continue;
      }
      // Free GPUs held by lower-queue jobs until the gang fits, or give up.
      const int my_level = level[static_cast<std::size_t>(id.value())];
      std::vector<int> trial = free;
      std::vector<JobId> chosen;
      std::optional<std::vector<int>> nodes;
      for (JobId v : victims) {
        if (preempted[static_cast<std::size_t>(v.value())]) continue;
        if (level[static_cast<std::size_t>(v.value())] <= my_level) break;  // sorted: none lower
        for (const ReplicaSlot& slot : state.run(v).slots) {
          trial[static_cast<std::size_t>(slot.node)] += static_cast<int>(slot.gpus.size());
        }
        chosen.push_back(v);
        if ((nodes = planGang(trial, j.replicas, j.gpus_per_replica))) break;
      }
      if (!nodes) continue;
      for (JobId v : chosen) {
        preempted[static_cast<std::size_t>(v.value())] = true;
        out.preempt.push_back(v);
      }
      free = trial;
      out.start.push_back(gangOn(id, *nodes));
    }
    return out;
  }

  std::optional<Timestamp> wakeup(const ReplayState& state) const override {
    bool high_waiting = false;
    for (JobId id : state.pending()) high_waiting = high_waiting || levelOf(state, id) == 0;
    if (!high_waiting) return std::nullopt;
    std::optional<Timestamp> next;
    for (JobId id : state.running()) {
      const std::int64_t left = options_.las_threshold_gpu_ms - state.attainedGpuMs(id);
      if (left <= 0) continue;
      const int gpus = state.job(id).gpus;
      const Timestamp t = state.now() + (left + gpus - 1) / gpus;
      if (!next || t < *next) next = t;
    }
    return next;
  }

 private:
  int levelOf(const ReplayState& state, JobId id) const {
    if (state.attainedGpuMs(id) < options_.las_threshold_gpu_ms) return 0;
    const JobRun& r = state.run(id);
    if (options_.starvation_factor > 0 && r.phase == JobPhase::kPending) {
      const double waited = static_cast<double>(state.now() - r.pending_since);
      if (waited >= options_.starvation_factor * static_cast<double>(state.runTime(id))) return 0;
    }
    return 1;
  }

  PolicyOptions options_;
};

}  // namespace

std::unique_ptr<ReplayPolicy> makeTiresiasPolicy(const PolicyOptions& options) {
  return std::make_unique<TiresiasPolicy>(options);
}

}  // namespace ty
