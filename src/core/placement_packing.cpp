// GPU packing, as the GpuPacking baseline of the FGD artifact
// (hkust-adsl/kubernetes-scheduler-simulator, gpu_packing_score.go):
// prefer, in this order,
//   1. a node where the replica fits on already partly used GPUs (the less
//      free share left on them, the better),
//   2. a node already in use where it needs fully free GPUs (the fewer,
//      the better),
//   3. an idle node (the fewer GPUs it has, the better).
// Scores are the artifact's integers; ties go to the first node in list
// order, the tie-break under which our FGD replay matches the artifact.
// CPU-only replicas: the first fitting node.
#include <algorithm>

#include "core/placement_gpus.h"
#include "core/placement_policies.h"

namespace ty {
namespace {

constexpr long kMaxScore = 100;

long packingScore(const NodeFree& node, const ReplicaShape& shape, const std::vector<int>& usable) {
  if (shape.gpu_count == 0) return 0;
  int gpus = 0, fully_free = 0;
  for (int f : node.gpu_free) {
    if (f < 0) continue;
    ++gpus;
    if (f == 1000) ++fully_free;
  }
  if (fully_free == gpus)
    return std::max(kMaxScore / 3 - fully_free, static_cast<long>(fully_free));
  // Least free share first, as the artifact walks the GPUs.
  std::vector<int> order = usable;
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return node.gpu_free[static_cast<std::size_t>(a)] < node.gpu_free[static_cast<std::size_t>(b)];
  });
  order.resize(static_cast<std::size_t>(shape.gpu_count));
  long whole_used = 0, free_ratio = 0;
  for (int p : order) {
    int f = node.gpu_free[static_cast<std::size_t>(p)];
    if (f == 1000) ++whole_used;
    free_ratio += f * 100 / 1000;
  }
  if (whole_used > 0) return std::max(kMaxScore / 2 - whole_used, kMaxScore / 3);
  return std::max(kMaxScore - free_ratio / 10, kMaxScore / 2);
}

class PackingPlacement final : public PlacementPolicy {
 public:
  std::string_view name() const override { return "packing"; }
  std::optional<NodeChoice> choose(const ClusterState& state, const ReplicaShape& shape,
                                   Rng& /*rng*/) override {
    const ModelMask mask = state.modelMask(shape);
    std::optional<std::size_t> best;
    long best_score = 0;
    for (std::size_t i = 0; i < state.nodes().size(); ++i) {
      if (!state.fits(i, shape, mask)) continue;
      long s = packingScore(state.nodes()[i], shape, state.usableGpus(i, shape, mask));
      if (!best || s > best_score) {
        best = i;
        best_score = s;
      }
    }
    if (!best) return std::nullopt;
    return NodeChoice{
        *best, pickGpuPositions(state.nodes()[*best], shape, state.usableGpus(*best, shape, mask))};
  }
};

}  // namespace

std::unique_ptr<PlacementPolicy> makePackingPlacement() {
  return std::make_unique<PackingPlacement>();
}

}  // namespace ty
