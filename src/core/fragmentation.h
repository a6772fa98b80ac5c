// GPU fragmentation against an expected workload, as defined by the FGD
// artifact (Weng et al., "Beware of Fragmentation: Scheduling GPU-Sharing
// Workloads with Fragmentation Gradient Descent", USENIX ATC'23;
// hkust-adsl/kubernetes-scheduler-simulator, pkg/utils/frag.go).
//
// For a node and one workload shape t:
//   - t cannot run on the node at all (too few GPUs with enough free share
//     of an accepted model, too little free CPU, or t is CPU-only): every
//     idle GPU milli of the node is fragment for t;
//   - t fits: only GPUs whose free milli is below t's per-GPU request (or
//     whose model t does not accept) are fragment.
// Node fragment = sum_t p_t * frag_t; cluster fragment = sum over nodes.
// As in the artifact, memory is not part of the measure (CPU is).
//
// The simulator reports with it and the fgd/trainyard policies score with
// it, so both use this one implementation. Pure and thread-compatible.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/cluster.h"
#include "core/placement.h"

namespace ty {

// The "typical pods" of a trace: distinct shapes (GPU count, per-GPU
// share, CPU, GPU selector; not memory, as the artifact keys them) by
// decreasing frequency, taking shapes until they cover `coverage` of all
// replicas, then renormalised so the weights sum to 1. Ties in frequency
// are broken by the order of first appearance, so the result is
// deterministic.
Workload typicalWorkload(const std::vector<ReplicaShape>& replicas, double coverage = 0.95);
// The same cut applied to an already weighted workload: the heaviest
// shapes covering `coverage` of the total weight, renormalised to 1
// (stable for equal weights).
Workload typicalShapes(const Workload& workload, double coverage = 0.95);

// A workload compiled against one cluster's GPU model table.
class FragmentationMeasure {
 public:
  FragmentationMeasure(const Workload& workload, const ClusterState& state);

  // Fragment (milli-GPU) of a node whose GPUs have `gpu_free` (milli, -1
  // unhealthy) of models `gpu_model`, with `free_cpu_milli` CPU free.
  double fragMilli(const int* gpu_free, const int* gpu_model, std::size_t gpus,
                   std::int64_t free_cpu_milli) const;
  double nodeFragMilli(const NodeFree& node) const {
    return fragMilli(node.gpu_free.data(), node.gpu_model.data(), node.gpu_free.size(),
                     node.free_cpus.milli());
  }
  // Sum over all nodes.
  double clusterFragMilli(const ClusterState& state) const;
  // The node's fragment after `shape` takes `positions` on it.
  double fragMilliAfter(const NodeFree& node, const ReplicaShape& shape,
                        const std::vector<int>& positions) const;

  bool empty() const { return shapes_.empty(); }

 private:
  struct Shape {
    int gpu_count = 0;
    int gpu_milli = 0;
    std::int64_t cpu_milli = 0;
    std::vector<char> models;  // accepted model ids
    double weight = 0;
  };
  std::vector<Shape> shapes_;
};

}  // namespace ty
