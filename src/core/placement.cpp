#include "core/placement.h"

namespace ty {
namespace {

// Best fit: the node with the fewest usable GPUs that still hold the
// replica, then the fewest free CPUs, then the name; so big blocks stay whole.
class BestFit final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit"; }
  std::optional<NodeChoice> choose(const ClusterState& state, const ReplicaShape& shape,
                                   Rng& /*rng*/) override {
    std::optional<NodeChoice> best;
    size_t best_free = 0;
    const auto& nodes = state.nodes();
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (!state.fits(i, shape)) continue;
      std::vector<int> usable = state.usableGpus(i, shape);
      const NodeFree* b = best ? &nodes[best->node] : nullptr;
      if (!best || usable.size() < best_free ||
          (usable.size() == best_free && nodes[i].free_cpus < b->free_cpus)) {
        usable.resize(static_cast<size_t>(shape.gpu_count));
        best_free = state.usableGpus(i, shape).size();
        best = NodeChoice{i, std::move(usable)};
      }
    }
    return best;
  }
};

}  // namespace

std::vector<std::string> placementPolicyNames() { return {"best-fit"}; }

Result<std::unique_ptr<PlacementPolicy>> makePlacementPolicy(std::string_view name,
                                                             const Workload& /*workload*/) {
  if (name == "best-fit") return std::unique_ptr<PlacementPolicy>(std::make_unique<BestFit>());
  return Status::invalidArgument("unknown placement policy \"" + std::string(name) +
                                     "\"; choose one of: best-fit",
                                 "placement");
}

}  // namespace ty
