// Skips nodes whose free capacity is identical to a node already scored in
// the same choose() call. Fragment scores depend only on the node's GPU
// models, free GPU shares and free CPU, and the policies that use this
// break ties towards the lower index, so the first node of each identical
// group decides for all of them. On the openb cluster (hundreds of
// identical idle or full machines) this removes most of the scoring work.
// Internal to core.
#pragma once

#include <cstdint>
#include <unordered_map>

#include "core/cluster.h"

namespace ty {

class IdenticalNodeFilter {
 public:
  // True when a node with the same models, free shares and free CPU was
  // already seen since the last reset.
  bool seenBefore(const std::vector<NodeFree>& nodes, std::size_t i) {
    const NodeFree& n = nodes[i];
    std::uint64_t h = 1469598103934665603ull ^ static_cast<std::uint64_t>(n.free_cpus.milli());
    for (std::size_t g = 0; g < n.gpu_free.size(); ++g) {
      h = (h ^ static_cast<std::uint64_t>(n.gpu_free[g] + 2)) * 1099511628211ull;
      h = (h ^ static_cast<std::uint64_t>(n.gpu_model[g])) * 1099511628211ull;
    }
    auto [it, inserted] = first_.try_emplace(h, i);
    if (inserted) return false;
    const NodeFree& o = nodes[it->second];
    // A hash collision between different nodes: score this one too.
    return o.free_cpus == n.free_cpus && o.gpu_free == n.gpu_free && o.gpu_model == n.gpu_model;
  }
  void reset() { first_.clear(); }

 private:
  std::unordered_map<std::uint64_t, std::size_t> first_;
};

}  // namespace ty
