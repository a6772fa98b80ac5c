// Best fit: the node with the fewest usable GPUs that still hold the
// replica, then the fewest free CPUs, then the lowest index; so large
// blocks of free GPUs stay whole for large replicas. The classic bin-packing
// heuristic (the "BestFit" baseline of Weng et al., ATC'23, ranks on
// leftover GPU and CPU too).
//
// GPU replicas are answered from ClusterState's index: each bucket (count
// of fully free GPUs of one model, ordered by free CPU) yields its tightest
// fitting node, plus the fitting nodes with a partly used GPU for sharing
// replicas; so a choice costs O(models * levels * log nodes), not a scan.
// CPU-only replicas scan.
#include "core/placement_gpus.h"
#include "core/placement_policies.h"

namespace ty {
namespace {

class BestFitPlacement final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "best-fit"; }
  std::optional<NodeChoice> choose(const ClusterState& state, const ReplicaShape& shape,
                                   Rng& /*rng*/) override {
    const ModelMask mask = state.modelMask(shape);
    std::optional<std::size_t> best;
    std::size_t best_usable = 0;
    const auto& nodes = state.nodes();
    auto consider = [&](std::size_t i) {
      std::size_t usable = state.usableGpus(i, shape, mask).size();
      if (!best || usable < best_usable ||
          (usable == best_usable &&
           (nodes[i].free_cpus < nodes[*best].free_cpus ||
            (nodes[i].free_cpus == nodes[*best].free_cpus && i < *best)))) {
        best = i;
        best_usable = usable;
      }
    };
    if (shape.gpu_count > 0) {
      for (std::size_t i : state.indexedCandidates(shape, mask, 1)) consider(i);
    } else {
      for (std::size_t i = 0; i < nodes.size(); ++i) {
        if (state.fits(i, shape, mask)) consider(i);
      }
    }
    if (!best) return std::nullopt;
    return NodeChoice{*best,
                      pickGpuPositions(nodes[*best], shape, state.usableGpus(*best, shape, mask))};
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> makeBestFitPlacement() {
  return std::make_unique<BestFitPlacement>();
}

}  // namespace ty
