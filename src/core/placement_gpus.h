// Which GPUs on a chosen node a replica gets. Shared by every placement
// policy so that GPU locality is handled one way.
#pragma once

#include <vector>

#include "core/cluster.h"

namespace ty {

// Picks `count` of the `usable` positions (ascending) on `node`.
//  - count > 1 with NodeInfo::gpu_links set: the set whose weakest link is
//    strongest, then the largest sum of links, then the lexicographically
//    smallest positions (NCCL rings run at the speed of the slowest hop).
//    Exhaustive for up to kMaxGpuSets subsets, greedy beyond that.
//  - a sharing replica (one GPU, share < 1000): the usable GPU with the
//    least free share, so partly used GPUs fill up before whole ones are
//    broken into (lowest position on ties).
//  - otherwise the lowest positions.
// Requires usable.size() >= count; deterministic.
std::vector<int> pickGpuPositions(const NodeFree& node, const ReplicaShape& shape,
                                  const std::vector<int>& usable);

inline constexpr long kMaxGpuSets = 20000;

}  // namespace ty
