// Random placement: a node drawn uniformly among those that can hold the
// replica (reservoir sampling over one scan), GPUs by the shared picker.
// The baseline of the FGD paper (Weng et al., ATC'23, "Random").
#include "core/placement_gpus.h"
#include "core/placement_policies.h"

namespace ty {
namespace {

class RandomPlacement final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "random"; }
  std::optional<NodeChoice> choose(const ClusterState& state, const ReplicaShape& shape,
                                   Rng& rng) override {
    const ModelMask mask = state.modelMask(shape);
    std::optional<std::size_t> pick;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < state.nodes().size(); ++i) {
      if (!state.fits(i, shape, mask)) continue;
      if (rng.below(++seen) == 0) pick = i;
    }
    if (!pick) return std::nullopt;
    return NodeChoice{
        *pick, pickGpuPositions(state.nodes()[*pick], shape, state.usableGpus(*pick, shape, mask))};
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> makeRandomPlacement() {
  return std::make_unique<RandomPlacement>();
}

}  // namespace ty
