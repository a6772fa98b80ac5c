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
  std::map<std::string, int> model_ids;
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
      auto [m, inserted] = model_ids.emplace(g.model, static_cast<int>(models_.size()));
      if (inserted) models_.push_back(g.model);
      f.gpu_model.push_back(m->second);
    }
    nodes_.push_back(std::move(f));
  }
  whole_.resize(models_.size());
  partial_.resize(models_.size());
  node_entries_.resize(nodes_.size());
  for (size_t i = 0; i < nodes_.size(); ++i) reindex(i);
}

void ClusterState::unindex(std::size_t node) {
  BucketKey key{nodes_[node].free_cpus.milli(), node};
  for (const NodeIndexEntry& e : node_entries_[node]) {
    whole_[static_cast<size_t>(e.model)][static_cast<size_t>(e.whole_free)].erase(key);
    if (e.partial) partial_[static_cast<size_t>(e.model)].erase(key);
  }
  node_entries_[node].clear();
}

void ClusterState::reindex(std::size_t node) {
  const NodeFree& n = nodes_[node];
  std::vector<NodeIndexEntry>& entries = node_entries_[node];
  for (size_t i = 0; i < n.gpu_free.size(); ++i) {
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const NodeIndexEntry& e) { return e.model == n.gpu_model[i]; });
    if (it == entries.end()) {
      entries.push_back({n.gpu_model[i], 0, false});
      it = entries.end() - 1;
    }
    if (n.gpu_free[i] == 1000) ++it->whole_free;
    if (n.gpu_free[i] > 0 && n.gpu_free[i] < 1000) it->partial = true;
  }
  BucketKey key{n.free_cpus.milli(), node};
  for (const NodeIndexEntry& e : entries) {
    auto& levels = whole_[static_cast<size_t>(e.model)];
    if (levels.size() <= static_cast<size_t>(e.whole_free)) {
      levels.resize(static_cast<size_t>(e.whole_free) + 1);
    }
    levels[static_cast<size_t>(e.whole_free)].insert(key);
    if (e.partial) partial_[static_cast<size_t>(e.model)].insert(key);
  }
}

ModelMask ClusterState::modelMask(const ReplicaShape& shape) const {
  ModelMask mask(models_.size(), 1);
  if (shape.gpu_types.empty()) return mask;
  for (size_t m = 0; m < models_.size(); ++m) {
    mask[m] = gpuModelMatches(shape.gpu_types, models_[m]) ? 1 : 0;
  }
  return mask;
}

std::vector<int> ClusterState::usableGpus(std::size_t node, const ReplicaShape& shape,
                                          const ModelMask& mask) const {
  std::vector<int> out;
  const NodeFree& n = nodes_[node];
  for (size_t i = 0; i < n.gpu_free.size(); ++i) {
    if (n.gpu_free[i] >= shape.gpu_milli && mask[static_cast<size_t>(n.gpu_model[i])]) {
      out.push_back(static_cast<int>(i));
    }
  }
  return out;
}

std::vector<int> ClusterState::usableGpus(std::size_t node, const ReplicaShape& shape) const {
  return usableGpus(node, shape, modelMask(shape));
}

bool ClusterState::fits(std::size_t node, const ReplicaShape& shape, const ModelMask& mask) const {
  const NodeFree& n = nodes_[node];
  if (!shape.cpus.isZero() && n.free_cpus < shape.cpus) return false;
  if (shape.memory_bytes > 0 && n.free_memory < shape.memory_bytes) return false;
  for (const auto& [k, v] : shape.node_selector) {
    auto it = n.info->labels.find(k);
    if (it == n.info->labels.end() || it->second != v) return false;
  }
  if (shape.gpu_count == 0) return true;
  int usable = 0;
  for (size_t i = 0; i < n.gpu_free.size(); ++i) {
    if (n.gpu_free[i] >= shape.gpu_milli && mask[static_cast<size_t>(n.gpu_model[i])]) {
      if (++usable >= shape.gpu_count) return true;
    }
  }
  return false;
}

bool ClusterState::fits(std::size_t node, const ReplicaShape& shape) const {
  return fits(node, shape, modelMask(shape));
}

std::vector<std::size_t> ClusterState::indexedCandidates(const ReplicaShape& shape,
                                                         const ModelMask& mask,
                                                         std::size_t per_bucket) const {
  std::vector<std::size_t> out;
  if (shape.gpu_count <= 0) return out;
  // A node with several models can sit in several buckets; report it once.
  auto seen = [&](std::size_t node) {
    return std::find(out.begin(), out.end(), node) != out.end();
  };
  const BucketKey from{shape.cpus.milli(), 0};
  if (shape.isSharing()) {
    const size_t limit = per_bucket * 16;
    for (size_t m = 0; m < models_.size(); ++m) {
      if (!mask[m]) continue;
      size_t taken = 0;
      for (auto it = partial_[m].lower_bound(from); it != partial_[m].end() && taken < limit;
           ++it) {
        if (!seen(it->second) && fits(it->second, shape, mask)) {
          out.push_back(it->second);
          ++taken;
        }
      }
    }
  }
  size_t max_level = 0;
  for (const auto& levels : whole_) max_level = std::max(max_level, levels.size());
  // A sharing shape can also start a fresh GPU: levels from 1 up.
  for (size_t k = static_cast<size_t>(std::max(shape.gpu_count, 1)); k < max_level; ++k) {
    for (size_t m = 0; m < models_.size(); ++m) {
      if (!mask[m] || k >= whole_[m].size()) continue;
      size_t taken = 0;
      const auto& bucket = whole_[m][k];
      for (auto it = bucket.lower_bound(from); it != bucket.end() && taken < per_bucket; ++it) {
        if (!seen(it->second) && fits(it->second, shape, mask)) {
          out.push_back(it->second);
          ++taken;
        }
      }
    }
  }
  return out;
}

void ClusterState::take(const NodeChoice& choice, const ReplicaShape& shape) {
  unindex(choice.node);
  NodeFree& n = nodes_[choice.node];
  for (int p : choice.gpu_positions) n.gpu_free[static_cast<size_t>(p)] -= shape.gpu_milli;
  if (!shape.cpus.isZero()) n.free_cpus -= shape.cpus;
  if (shape.memory_bytes > 0) n.free_memory -= shape.memory_bytes;
  reindex(choice.node);
}

void ClusterState::give(const NodeChoice& choice, const ReplicaShape& shape) {
  unindex(choice.node);
  NodeFree& n = nodes_[choice.node];
  for (int p : choice.gpu_positions) n.gpu_free[static_cast<size_t>(p)] += shape.gpu_milli;
  if (!shape.cpus.isZero()) n.free_cpus += shape.cpus;
  if (shape.memory_bytes > 0) n.free_memory += shape.memory_bytes;
  reindex(choice.node);
}

ReplicaPlacement ClusterState::toPlacement(const NodeChoice& choice,
                                           const ReplicaShape& shape) const {
  const NodeFree& n = nodes_[choice.node];
  ReplicaPlacement p{n.info->name, {}, shape.gpu_count == 0 ? 1000 : shape.gpu_milli};
  for (int pos : choice.gpu_positions)
    p.gpus.push_back(n.info->gpus[static_cast<size_t>(pos)].index);
  return p;
}

}  // namespace ty
