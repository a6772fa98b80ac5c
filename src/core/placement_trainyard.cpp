// Trainyard placement (the default): Fragmentation Gradient Descent with a
// tie-break that keeps large machines whole, unless the workload pins
// much of its demand to particular GPU models.
//
// It scores like FGD (Weng et al., USENIX ATC'23; fgd_score.go in their
// artifact): for each node that can hold the replica (each usable GPU for
// a sharing replica) the growth of the node's fragment against the typical
// workload (the shapes covering 95% of replicas), mapped to the artifact's
// integer score int(100 * sigmoid(-growth / 1000)). FGD sends ties to the
// first node in list order. Trainyard first sends them to nodes with fewer
// than 8 GPUs, then by index: small machines absorb the many small
// replicas and 8-GPU machines stay whole for 8-GPU replicas, which the
// typical workload often omits. Only the small/large class is compared,
// not the GPU count or the usable GPUs: finer best-fit orders measured
// worse (docs/simulator.md), because list order consolidates by itself
// (the same first nodes keep winning) while best fit scatters load across
// every partly used node.
//
// Model pressure: when model-constrained shapes (gpu_types) expect to need
// a large share of some model's capacity, the small-first class is
// dropped and ties go by index alone, as in FGD. On the openb gpuspec
// traces the small machines are exactly the T4/P100 nodes those replicas
// need; every model-aware per-node order that was tried (scarcest model
// last, reserved models ranked with the large machines) dropped more
// constrained replicas than plain list order.
//
// What was measured and rejected (docs/simulator.md): comparing the growth
// exactly instead of through the integer score, even only as a tie-break
// (the coarse score's large ties are what the tie-break turns into
// consolidation), measuring against every shape instead of the 95% set,
// ranking ties by CPU per free GPU, and preferring partly used nodes over
// fully idle 8-GPU nodes (no effect: the score already separates them).
//
// Large clusters: above kScanAll nodes it scores only the candidates that
// ClusterState's index yields (the tightest nodes of each free-GPU bucket,
// and partly used nodes for sharing replicas) instead of every node.
#include <algorithm>
#include <cmath>

#include "core/fragmentation.h"
#include "core/placement_dedupe.h"
#include "core/placement_gpus.h"
#include "core/placement_policies.h"
#include "core/placement_trainyard_pinned.h"

namespace ty {
namespace {

constexpr std::size_t kScanAll = 2048;
constexpr std::size_t kPerBucket = 4;
// Nodes with fewer GPUs than this go first on ties.
constexpr std::size_t kLargeNodeGpus = 8;
// Above this expected share of one model's capacity taken by constrained
// shapes, ties go by index alone. openb: gpuspec05 peaks at 0.20 (T4) and
// still gains from small-first; gpuspec10 peaks at 0.35 and loses.
constexpr double kPinnedShareLimit = 0.25;

struct Score {
  long fgd = 0;   // higher is better
  int large = 0;  // 1: a large node, kept for large replicas
  std::size_t node = 0;
  bool operator<(const Score& o) const {  // "better than"
    if (fgd != o.fgd) return fgd > o.fgd;
    if (large != o.large) return large < o.large;
    return node < o.node;
  }
};

long fgdScore(double growth) {
  return static_cast<long>(100.0 / (1.0 + std::exp(growth / 1000.0)));
}

}  // namespace

// The largest expected share of one GPU model's capacity that the
// workload's model-constrained shapes need: each constrained shape's share
// of the total GPU demand, scaled to the cluster's capacity and spread over
// the models it accepts in proportion to their capacity. 0 when nothing is
// constrained.
double pinnedModelShare(const Workload& workload, const ClusterState& state) {
  const std::size_t models = state.gpuModels().size();
  std::vector<double> cap(models, 0);
  double total_cap = 0;
  for (const NodeFree& n : state.nodes()) {
    for (std::size_t g = 0; g < n.gpu_free.size(); ++g) {
      if (n.gpu_free[g] < 0) continue;  // unhealthy
      cap[static_cast<std::size_t>(n.gpu_model[g])] += 1000;
      total_cap += 1000;
    }
  }
  double total_demand = 0;
  for (const WorkloadShape& w : workload) {
    total_demand += w.weight * static_cast<double>(w.shape.totalGpuMilli());
  }
  if (total_demand <= 0 || total_cap <= 0) return 0;
  std::vector<double> pinned(models, 0);
  for (const WorkloadShape& w : workload) {
    if (w.shape.gpu_types.empty() || w.shape.gpu_count == 0) continue;
    const ModelMask mask = state.modelMask(w.shape);
    double accepted = 0;
    for (std::size_t m = 0; m < models; ++m) accepted += mask[m] ? cap[m] : 0;
    if (accepted <= 0) continue;
    const double demand =
        w.weight * static_cast<double>(w.shape.totalGpuMilli()) / total_demand * total_cap;
    for (std::size_t m = 0; m < models; ++m) {
      if (mask[m]) pinned[m] += demand / accepted;
    }
  }
  return pinned.empty() ? 0 : *std::max_element(pinned.begin(), pinned.end());
}

namespace {

class TrainyardPlacement final : public PlacementPolicy {
 public:
  explicit TrainyardPlacement(const Workload& workload)
      : all_(workload), workload_(typicalShapes(workload, 0.95)) {}
  std::string_view name() const override { return "trainyard"; }

  std::optional<NodeChoice> choose(const ClusterState& state, const ReplicaShape& shape,
                                   Rng& /*rng*/) override {
    if (!measure_ || bound_models_ != state.gpuModels()) {
      measure_.emplace(workload_, state);
      bound_models_ = state.gpuModels();
      small_first_ = pinnedModelShare(all_, state) <= kPinnedShareLimit;
    }
    const ModelMask mask = state.modelMask(shape);
    std::optional<NodeChoice> best;
    Score best_score;
    auto consider = [&](std::size_t i) {
      const NodeFree& node = state.nodes()[i];
      std::vector<int> usable = state.usableGpus(i, shape, mask);
      const double before = measure_->nodeFragMilli(node);
      Score s;
      s.node = i;
      s.large = small_first_ && node.gpu_free.size() >= kLargeNodeGpus ? 1 : 0;
      std::vector<int> positions;
      if (shape.isSharing()) {
        for (int p : usable) {
          long g = fgdScore(measure_->fragMilliAfter(node, shape, {p}) - before);
          // Same score: the GPU with less free share, so whole GPUs stay whole.
          if (positions.empty() || g > s.fgd ||
              (g == s.fgd && node.gpu_free[static_cast<std::size_t>(p)] <
                                 node.gpu_free[static_cast<std::size_t>(positions.front())])) {
            s.fgd = g;
            positions = {p};
          }
        }
      } else {
        positions = pickGpuPositions(node, shape, usable);
        s.fgd = fgdScore(measure_->fragMilliAfter(node, shape, positions) - before);
      }
      if (!best || s < best_score) {
        best = NodeChoice{i, std::move(positions)};
        best_score = s;
      }
    };
    if (state.nodes().size() > kScanAll && shape.gpu_count > 0) {
      for (std::size_t i : state.indexedCandidates(shape, mask, kPerBucket)) consider(i);
    } else {
      seen_.reset();
      for (std::size_t i = 0; i < state.nodes().size(); ++i) {
        if (state.fits(i, shape, mask) && !seen_.seenBefore(state.nodes(), i)) consider(i);
      }
    }
    return best;
  }

 private:
  Workload all_;       // every shape, for the model pressure
  Workload workload_;  // the typical 95%, for the fragment
  std::optional<FragmentationMeasure> measure_;
  std::vector<std::string> bound_models_;
  bool small_first_ = true;
  IdenticalNodeFilter seen_;
};

}  // namespace

std::unique_ptr<PlacementPolicy> makeTrainyardPlacement(const Workload& workload) {
  return std::make_unique<TrainyardPlacement>(workload);
}

}  // namespace ty
