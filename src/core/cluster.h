// The cluster as the scheduler core sees it: what each node has, what is
// in use, and the free capacity that a pass hands out replica by replica.
// Plain values; no I/O.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
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
  std::vector<std::string> gpu_types;                 // any-of model selector; empty: any
  std::map<std::string, std::string> node_selector;  // labels the node must have
  std::int64_t totalGpuMilli() const { return static_cast<std::int64_t>(gpu_count) * gpu_milli; }
  bool operator==(const ReplicaShape&) const = default;
};

// The shape of one replica of a job with these resources.
ReplicaShape shapeOf(const Resources& r, const std::map<std::string, std::string>& node_selector);

// Free capacity of one node during a pass.
struct NodeFree {
  const NodeInfo* info = nullptr;
  std::vector<int> gpu_free;  // milli-GPU free, by position in info->gpus; -1 when unhealthy
  Quantity free_cpus;
  std::int64_t free_memory = 0;
};

// Where a placement policy puts one replica: a node and GPU positions on it.
struct NodeChoice {
  std::size_t node = 0;
  std::vector<int> gpu_positions;
  bool operator==(const NodeChoice&) const = default;
};

// The free capacity of every node, updated as replicas are placed (take)
// and as tentative gang members are undone (give).
class ClusterState {
 public:
  explicit ClusterState(const ClusterSnapshot& snapshot);

  const std::vector<NodeFree>& nodes() const { return nodes_; }
  // Whether the node's CPU, memory, labels and GPU models could hold the
  // replica now, counting only GPUs with enough free share.
  bool fits(std::size_t node, const ReplicaShape& shape) const;
  // Positions of GPUs on the node that match the shape's models and have
  // at least its per-GPU share free.
  std::vector<int> usableGpus(std::size_t node, const ReplicaShape& shape) const;
  void take(const NodeChoice& choice, const ReplicaShape& shape);
  void give(const NodeChoice& choice, const ReplicaShape& shape);
  ReplicaPlacement toPlacement(const NodeChoice& choice, const ReplicaShape& shape) const;

 private:
  std::vector<NodeFree> nodes_;
};

}  // namespace ty
