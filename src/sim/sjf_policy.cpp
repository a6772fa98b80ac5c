// SJF: pending jobs by estimated run time, shortest first (ties by
// submission); every job that fits starts, in that order. Never preempts.
// It reads the same estimate the core gets as max_runtime, never the true
// duration; without estimates every job ties and it is submission order
// with skipping.
#include <algorithm>

#include "sim/job_policies.h"

namespace ty {
namespace {

class SjfPolicy : public ReplayPolicy {
 public:
  std::string_view name() const override { return "sjf"; }
  ReplayActions decide(const ReplayState& state, Rng& /*rng*/) override {
    std::vector<JobId> order = state.pending();
    std::stable_sort(order.begin(), order.end(), [&](JobId a, JobId b) {
      return state.job(a).estimate < state.job(b).estimate;
    });
    ReplayActions out;
    std::vector<int> free = state.freePerNode();
    for (JobId id : order) {
      const SimJob& j = state.job(id);
      if (auto nodes = planGang(free, j.replicas, j.gpus_per_replica)) {
        out.start.push_back(gangOn(id, *nodes));
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<ReplayPolicy> makeSjfPolicy() { return std::make_unique<SjfPolicy>(); }

}  // namespace ty
