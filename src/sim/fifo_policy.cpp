// FIFO: jobs start in submission order and the first one that does not fit
// blocks every job behind it, as in a plain batch queue (YARN capacity
// scheduler without reservations, the Tiresias paper's baseline). Never
// preempts.
#include "sim/job_policies.h"

namespace ty {
namespace {

class FifoPolicy : public ReplayPolicy {
 public:
  std::string_view name() const override { return "fifo"; }
  ReplayActions decide(const ReplayState& state, Rng& /*rng*/) override {
    ReplayActions out;
    std::vector<int> free = state.freePerNode();
    for (JobId id : state.pending()) {
      const SimJob& j = state.job(id);
      auto nodes = planGang(free, j.replicas, j.gpus_per_replica);
      if (!nodes) break;  // head-of-line blocking
      out.start.push_back(gangOn(id, *nodes));
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<ReplayPolicy> makeFifoPolicy() { return std::make_unique<FifoPolicy>(); }

}  // namespace ty
