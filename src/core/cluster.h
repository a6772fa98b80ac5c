// The cluster as the scheduler core sees it: what each node has, what is
// in use, and the free capacity that a pass hands out replica by replica.
// Plain values; no I/O. ClusterState is not thread-safe; it keeps pointers
// into the ClusterSnapshot it was built from, which must outlive it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "common/quantity.h"
#include "core/job.h"
#include "core/node.h"

namespace ty {

// A node and what is already in use on it.
struct NodeState {
  NodeInfo info;
  std::map<int, int> gpu_used_milli;  // GPU index -> milli-GPU held by running jobs
  Quantity used_cpus;
  std::int64_t used_memory = 0;
};

struct ClusterSnapshot {
  std::vector<NodeState> nodes;
};

// What one replica asks of one node.
struct ReplicaShape {
  int gpu_count = 0;     // GPUs it touches
  int gpu_milli = 1000;  // share of each; below 1000 only when gpu_count == 1
  Quantity cpus;
  std::int64_t memory_bytes = 0;
  std::vector<std::string> gpu_types;                // any-of model selector; empty: any
  std::map<std::string, std::string> node_selector;  // labels the node must have
  std::int64_t totalGpuMilli() const { return static_cast<std::int64_t>(gpu_count) * gpu_milli; }
  // A replica that may share one GPU with others.
  bool isSharing() const { return gpu_count == 1 && gpu_milli < 1000; }
  bool operator==(const ReplicaShape&) const = default;
};

// The shape of one replica of a job with these resources.
ReplicaShape shapeOf(const Resources& r, const std::map<std::string, std::string>& node_selector);
// Only what a replica holds (GPU count and share, CPU, memory), without the
// selectors: enough to take or give it back, and copies no strings.
ReplicaShape heldShapeOf(const Resources& r);

// Free capacity of one node during a pass.
struct NodeFree {
  const NodeInfo* info = nullptr;
  std::vector<int> gpu_free;  // milli-GPU free, by position in info->gpus; -1 when unhealthy
  Quantity free_cpus;
  std::int64_t free_memory = 0;
  std::vector<int> gpu_model;  // interned model id (ClusterState::gpuModels) by position
};

// Where a placement policy puts one replica: a node and GPU positions on it.
struct NodeChoice {
  std::size_t node = 0;
  std::vector<int> gpu_positions;
  bool operator==(const NodeChoice&) const = default;
};

// Which GPU models (by interned id) a shape's selector accepts.
using ModelMask = std::vector<char>;

// The free capacity of every node, updated as replicas are placed (take)
// and as tentative gang members are undone (give).
//
// Besides the per-node values it keeps an index so that policies need not
// scan every node per replica: for each GPU model and each count k, the
// nodes with exactly k fully free GPUs of that model, ordered by free CPU;
// and for each model the nodes with a partly used GPU of that model. Both
// are kept current by take and give (O(models on the node * log nodes)).
class ClusterState {
 public:
  explicit ClusterState(const ClusterSnapshot& snapshot);

  const std::vector<NodeFree>& nodes() const { return nodes_; }
  // GpuInfo::index of each GPU of the node, by position: a compact copy,
  // so that mapping indices to positions does not walk the NodeInfo.
  std::span<const int> gpuIndices(std::size_t node) const {
    return {gpu_indices_.data() + gpu_begin_[node], gpu_indices_.data() + gpu_begin_[node + 1]};
  }
  // Whether the node's CPU, memory, labels and GPU models could hold the
  // replica now, counting only GPUs with enough free share.
  bool fits(std::size_t node, const ReplicaShape& shape) const;
  // As fits, with the shape's model selector already resolved by modelMask.
  bool fits(std::size_t node, const ReplicaShape& shape, const ModelMask& mask) const;
  // Positions of GPUs on the node that match the shape's models and have
  // at least its per-GPU share free.
  std::vector<int> usableGpus(std::size_t node, const ReplicaShape& shape) const;
  std::vector<int> usableGpus(std::size_t node, const ReplicaShape& shape,
                              const ModelMask& mask) const;
  void take(const NodeChoice& choice, const ReplicaShape& shape);
  void give(const NodeChoice& choice, const ReplicaShape& shape);
  // As above, for callers that keep GPU positions in their own storage
  // (the scheduler's running jobs) rather than in a NodeChoice.
  void take(std::size_t node, std::span<const int> gpu_positions, const ReplicaShape& shape);
  void give(std::size_t node, std::span<const int> gpu_positions, const ReplicaShape& shape);
  ReplicaPlacement toPlacement(const NodeChoice& choice, const ReplicaShape& shape) const;

  // Distinct GPU models in the cluster; NodeFree::gpu_model indexes this.
  const std::vector<std::string>& gpuModels() const { return models_; }
  // mask[m] != 0 when the shape's selector accepts gpuModels()[m].
  ModelMask modelMask(const ReplicaShape& shape) const;

  // Candidate nodes for a GPU shape, found through the index instead of a
  // scan: for each count k of fully free matching GPUs, smallest first, and
  // each accepted model, up to `per_bucket` nodes that fit, taken in order
  // of free CPU from the replica's CPU request up (so the first is the
  // tightest CPU fit). For a sharing shape, first every fitting node with a
  // partly used matching GPU (at most `per_bucket * 16`). Each node at most
  // once. Empty for CPU-only shapes: callers scan those.
  std::vector<std::size_t> indexedCandidates(const ReplicaShape& shape, const ModelMask& mask,
                                             std::size_t per_bucket) const;

 private:
  // (free CPU milli, node): the order inside one bucket.
  using BucketKey = std::pair<std::int64_t, std::size_t>;
  struct NodeIndexEntry {
    int model = 0;
    int whole_free = 0;  // fully free healthy GPUs of this model on the node
    bool partial = false;
  };
  void countFree(std::size_t node);
  void reindex(std::size_t node, BucketKey before);
  std::span<NodeIndexEntry> entriesOf(std::size_t node) {
    return {entries_.data() + entry_begin_[node], entries_.data() + entry_begin_[node + 1]};
  }

  std::vector<NodeFree> nodes_;
  std::vector<std::string> models_;
  // whole_[model][k]: nodes with exactly k fully free GPUs of that model.
  std::vector<std::vector<std::set<BucketKey>>> whole_;
  // partial_[model]: nodes with a GPU of that model that is partly used.
  std::vector<std::set<BucketKey>> partial_;
  // One entry per GPU model present on a node, node by node: entries of
  // node i are entries_[entry_begin_[i], entry_begin_[i + 1]). A node's
  // models never change, so one flat array serves all nodes.
  std::vector<NodeIndexEntry> entries_;
  std::vector<std::size_t> entry_begin_;
  std::vector<int> gpu_indices_;  // node by node, from gpu_begin_[node]
  std::vector<std::size_t> gpu_begin_;
};

}  // namespace ty
