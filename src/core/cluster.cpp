#include "core/cluster.h"

#include <algorithm>

namespace ty {

ReplicaShape shapeOf(const Resources& r, const std::map<std::string, std::string>& node_selector) {
  ReplicaShape s;
  if (r.gpus.isWhole()) {
    s.gpu_count = static_cast<int>(r.gpus.wholeUnits());
    s.gpu_milli = 1000;
  } else {
    s.gpu_count = 1;
    s.gpu_milli = static_cast<int>(r.gpus.milli());
  }
  s.cpus = r.cpus;
  s.memory_bytes = r.memory_bytes;
  s.gpu_types = r.gpu_types;
  s.node_selector = node_selector;
  return s;
}

ClusterState::ClusterState(const ClusterSnapshot& snapshot) {
  nodes_.reserve(snapshot.nodes.size());
  for (const auto& n : snapshot.nodes) {
    NodeFree f;
    f.info = &n.info;
    f.free_cpus = n.info.cpus - n.used_cpus;
    f.free_memory = n.info.memory_bytes - n.used_memory;
    f.gpu_free.reserve(n.info.gpus.size());
    for (const auto& g : n.info.gpus) {
      auto it = n.gpu_used_milli.find(g.index);
      int used = it == n.gpu_used_milli.end() ? 0 : it->second;
      f.gpu_free.push_back(g.healthy ? std::max(0, 1000 - used) : -1);
    }
    nodes_.push_back(std::move(f));
  }
}

std::vector<int> ClusterState::usableGpus(std::size_t node, const ReplicaShape& shape) const {
  std::vector<int> out;
  const NodeFree& n = nodes_[node];
  for (size_t i = 0; i < n.gpu_free.size(); ++i) {
    if (n.gpu_free[i] >= shape.gpu_milli && gpuModelMatches(shape.gpu_types, n.info->gpus[i].model)) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

bool ClusterState::fits(std::size_t node, const ReplicaShape& shape) const {
  const NodeFree& n = nodes_[node];
  if (!shape.cpus.isZero() && n.free_cpus < shape.cpus) return false;
  if (shape.memory_bytes > 0 && n.free_memory < shape.memory_bytes) return false;
  for (const auto& [k, v] : shape.node_selector) {
    auto it = n.info->labels.find(k);
    if (it == n.info->labels.end() || it->second != v) return false;
  }
  if (shape.gpu_count == 0) return true;
  return static_cast<int>(usableGpus(node, shape).size()) >= shape.gpu_count;
}

void ClusterState::take(const NodeChoice& choice, const ReplicaShape& shape) {
  NodeFree& n = nodes_[choice.node];
  for (int p : choice.gpu_positions) n.gpu_free[static_cast<size_t>(p)] -= shape.gpu_milli;
  if (!shape.cpus.isZero()) n.free_cpus -= shape.cpus;
  if (shape.memory_bytes > 0) n.free_memory -= shape.memory_bytes;
}

void ClusterState::give(const NodeChoice& choice, const ReplicaShape& shape) {
  NodeFree& n = nodes_[choice.node];
  for (int p : choice.gpu_positions) n.gpu_free[static_cast<size_t>(p)] += shape.gpu_milli;
  if (!shape.cpus.isZero()) n.free_cpus += shape.cpus;
  if (shape.memory_bytes > 0) n.free_memory += shape.memory_bytes;
}

ReplicaPlacement ClusterState::toPlacement(const NodeChoice& choice,
                                           const ReplicaShape& shape) const {
  const NodeFree& n = nodes_[choice.node];
  ReplicaPlacement p{n.info->name, {}, shape.gpu_count == 0 ? 1000 : shape.gpu_milli};
  for (int pos : choice.gpu_positions) p.gpus.push_back(n.info->gpus[static_cast<size_t>(pos)].index);
  return p;
}

}  // namespace ty
