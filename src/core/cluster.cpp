#include "core/cluster.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

namespace ty {

ReplicaShape shapeOf(const Resources& r, const std::map<std::string, std::string>& node_selector) {
  ReplicaShape s = heldShapeOf(r);
  s.gpu_types = r.gpu_types;
  s.node_selector = node_selector;
  return s;
}

ReplicaShape heldShapeOf(const Resources& r) {
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
  return s;
}

ClusterState::ClusterState(const ClusterSnapshot& snapshot) {
  nodes_.reserve(snapshot.nodes.size());
  entry_begin_.reserve(snapshot.nodes.size() + 1);
  gpu_begin_.reserve(snapshot.nodes.size() + 1);
  // A pass builds this for every node of the cluster, so model names are
  // interned without copying them: GPUs of one node almost always share a
  // model, and the views point into the snapshot, which outlives the loop.
  std::unordered_map<std::string_view, int> model_ids;
  for (const auto& n : snapshot.nodes) {
    NodeFree f;
    f.info = &n.info;
    f.free_cpus = n.info.cpus - n.used_cpus;
    f.free_memory = n.info.memory_bytes - n.used_memory;
    const std::size_t count = n.info.gpus.size();
    f.gpu_free.resize(count);
    f.gpu_model.resize(count);
    const std::size_t first_entry = entries_.size();
    entry_begin_.push_back(first_entry);
    gpu_begin_.push_back(gpu_indices_.size());
    for (std::size_t i = 0; i < count; ++i) {
      const GpuInfo& g = n.info.gpus[i];
      int used = 0;
      if (!n.gpu_used_milli.empty()) {
        auto it = n.gpu_used_milli.find(g.index);
        if (it != n.gpu_used_milli.end()) used = it->second;
      }
      f.gpu_free[i] = g.healthy ? std::max(0, 1000 - used) : -1;
      int model = 0;
      if (i > 0 && g.model == n.info.gpus[i - 1].model) {
        model = f.gpu_model[i - 1];
      } else {
        auto [it, inserted] = model_ids.try_emplace(g.model, static_cast<int>(models_.size()));
        if (inserted) models_.push_back(g.model);
        model = it->second;
      }
      f.gpu_model[i] = model;
      gpu_indices_.push_back(g.index);
      auto known =
          std::find_if(entries_.begin() + static_cast<std::ptrdiff_t>(first_entry), entries_.end(),
                       [&](const NodeIndexEntry& e) { return e.model == model; });
      if (known == entries_.end()) entries_.push_back({model, 0, false});
    }
    nodes_.push_back(std::move(f));
  }
  entry_begin_.push_back(entries_.size());
  gpu_begin_.push_back(gpu_indices_.size());
  // The index is built in bulk: each bucket's keys sorted once, so that the
  // sets are filled in order (linear) instead of by one search per node.
  std::vector<std::vector<std::vector<BucketKey>>> whole_keys(models_.size());
  std::vector<std::vector<BucketKey>> partial_keys(models_.size());
  for (std::size_t i = 0; i < nodes_.size(); ++i) {
    countFree(i);
    const BucketKey key{nodes_[i].free_cpus.milli(), i};
    for (const NodeIndexEntry& e : entriesOf(i)) {
      auto& levels = whole_keys[static_cast<std::size_t>(e.model)];
      if (levels.size() <= static_cast<std::size_t>(e.whole_free)) {
        levels.resize(static_cast<std::size_t>(e.whole_free) + 1);
      }
      levels[static_cast<std::size_t>(e.whole_free)].push_back(key);
      if (e.partial) partial_keys[static_cast<std::size_t>(e.model)].push_back(key);
    }
  }
  auto toSet = [](std::vector<BucketKey>& keys) {
    std::sort(keys.begin(), keys.end());
    return std::set<BucketKey>(keys.begin(), keys.end());
  };
  whole_.resize(models_.size());
  partial_.resize(models_.size());
  for (std::size_t m = 0; m < models_.size(); ++m) {
    for (auto& keys : whole_keys[m]) whole_[m].push_back(toSet(keys));
    partial_[m] = toSet(partial_keys[m]);
  }
}

void ClusterState::countFree(std::size_t node) {
  const NodeFree& n = nodes_[node];
  std::span<NodeIndexEntry> entries = entriesOf(node);
  for (NodeIndexEntry& e : entries) {
    e.whole_free = 0;
    e.partial = false;
  }
  for (std::size_t i = 0; i < n.gpu_free.size(); ++i) {
    auto it = std::find_if(entries.begin(), entries.end(),
                           [&](const NodeIndexEntry& e) { return e.model == n.gpu_model[i]; });
    if (n.gpu_free[i] == 1000) ++it->whole_free;
    if (n.gpu_free[i] > 0 && n.gpu_free[i] < 1000) it->partial = true;
  }
}

// Moves the node's index entries to where its new free counts and CPU put
// them. Set nodes are moved, not freed and allocated again: take and give
// run for every replica placed, given back or tried in a pass.
void ClusterState::reindex(std::size_t node, BucketKey before) {
  const NodeFree& n = nodes_[node];
  const BucketKey after{n.free_cpus.milli(), node};
  for (NodeIndexEntry& e : entriesOf(node)) {
    int whole_free = 0;
    bool partial = false;
    for (std::size_t i = 0; i < n.gpu_free.size(); ++i) {
      if (n.gpu_model[i] != e.model) continue;
      if (n.gpu_free[i] == 1000) ++whole_free;
      if (n.gpu_free[i] > 0 && n.gpu_free[i] < 1000) partial = true;
    }
    auto& levels = whole_[static_cast<size_t>(e.model)];
    if (whole_free != e.whole_free || before != after) {
      auto moved = levels[static_cast<size_t>(e.whole_free)].extract(before);
      moved.value() = after;
      if (levels.size() <= static_cast<size_t>(whole_free)) {
        levels.resize(static_cast<size_t>(whole_free) + 1);
      }
      levels[static_cast<size_t>(whole_free)].insert(std::move(moved));
    }
    auto& partly = partial_[static_cast<size_t>(e.model)];
    if (e.partial && partial && before != after) {
      auto moved = partly.extract(before);
      moved.value() = after;
      partly.insert(std::move(moved));
    } else if (e.partial && !partial) {
      partly.erase(before);
    } else if (!e.partial && partial) {
      partly.insert(after);
    }
    e.whole_free = whole_free;
    e.partial = partial;
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
  take(choice.node, choice.gpu_positions, shape);
}

void ClusterState::give(const NodeChoice& choice, const ReplicaShape& shape) {
  give(choice.node, choice.gpu_positions, shape);
}

void ClusterState::take(std::size_t node, std::span<const int> gpu_positions,
                        const ReplicaShape& shape) {
  NodeFree& n = nodes_[node];
  const BucketKey before{n.free_cpus.milli(), node};
  for (int p : gpu_positions) n.gpu_free[static_cast<size_t>(p)] -= shape.gpu_milli;
  if (!shape.cpus.isZero()) n.free_cpus -= shape.cpus;
  if (shape.memory_bytes > 0) n.free_memory -= shape.memory_bytes;
  reindex(node, before);
}

void ClusterState::give(std::size_t node, std::span<const int> gpu_positions,
                        const ReplicaShape& shape) {
  NodeFree& n = nodes_[node];
  const BucketKey before{n.free_cpus.milli(), node};
  for (int p : gpu_positions) n.gpu_free[static_cast<size_t>(p)] += shape.gpu_milli;
  if (!shape.cpus.isZero()) n.free_cpus += shape.cpus;
  if (shape.memory_bytes > 0) n.free_memory += shape.memory_bytes;
  reindex(node, before);
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
