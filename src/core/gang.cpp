#include "core/gang.h"

#include <algorithm>
#include <limits>
#include <map>

namespace ty {
namespace {

// The gang as one replica: N replicas of g whole GPUs are one of N*g GPUs.
ReplicaShape combined(const ReplicaShape& s, int replicas) {
  ReplicaShape c = s;
  c.gpu_count = s.gpu_count * replicas;
  c.cpus = s.cpus.times(replicas);
  c.memory_bytes = s.memory_bytes * replicas;
  return c;
}

// Splits the single-node choice for the combined shape into replicas.
std::vector<NodeChoice> split(const NodeChoice& c, const ReplicaShape& s, int replicas) {
  std::vector<NodeChoice> out;
  for (int r = 0; r < replicas; ++r) {
    NodeChoice one{c.node, {}};
    for (int k = 0; k < s.gpu_count; ++k) {
      one.gpu_positions.push_back(c.gpu_positions[static_cast<size_t>(r * s.gpu_count + k)]);
    }
    out.push_back(std::move(one));
  }
  return out;
}

struct Candidate {
  std::size_t node;
  int capacity;
};

// Fewest nodes from `cands` holding `replicas`; empty when they cannot.
std::vector<Candidate> fewestNodes(std::vector<Candidate> cands, int replicas) {
  std::stable_sort(cands.begin(), cands.end(),
                   [](const Candidate& a, const Candidate& b) { return a.capacity > b.capacity; });
  std::vector<Candidate> out;
  int sum = 0;
  size_t i = 0;
  for (; i < cands.size() && sum < replicas; ++i) {
    out.push_back(cands[i]);
    sum += cands[i].capacity;
  }
  if (sum < replicas) return {};
  // The last node: the tightest one (among it and the rest) that holds what
  // the others leave over.
  int rest = replicas - (sum - out.back().capacity);
  for (size_t j = i; j < cands.size(); ++j) {
    if (cands[j].capacity >= rest && cands[j].capacity < out.back().capacity) out.back() = cands[j];
  }
  return out;
}

}  // namespace

int replicaCapacity(const ClusterState& state, std::size_t node, const ReplicaShape& shape) {
  return replicaCapacity(state, node, shape, state.modelMask(shape));
}

int replicaCapacity(const ClusterState& state, std::size_t node, const ReplicaShape& shape,
                    const ModelMask& mask) {
  if (!state.fits(node, shape, mask)) return 0;
  const NodeFree& n = state.nodes()[node];
  std::int64_t cap = std::numeric_limits<int>::max();
  if (!shape.cpus.isZero()) cap = std::min(cap, n.free_cpus.milli() / shape.cpus.milli());
  if (shape.memory_bytes > 0) cap = std::min(cap, n.free_memory / shape.memory_bytes);
  if (shape.gpu_count > 0) {
    std::int64_t slots = 0;
    for (std::size_t p = 0; p < n.gpu_free.size(); ++p) {
      if (n.gpu_free[p] >= shape.gpu_milli && mask[static_cast<std::size_t>(n.gpu_model[p])]) {
        slots += n.gpu_free[p] / shape.gpu_milli;
      }
    }
    cap = std::min(cap, slots / shape.gpu_count);
  }
  return static_cast<int>(std::max<std::int64_t>(0, cap));
}

void takeAll(ClusterState& state, const std::vector<NodeChoice>& choices,
             const ReplicaShape& shape) {
  for (const auto& c : choices) state.take(c, shape);
}

void giveAll(ClusterState& state, const std::vector<NodeChoice>& choices,
             const ReplicaShape& shape) {
  for (auto it = choices.rbegin(); it != choices.rend(); ++it) state.give(*it, shape);
}

std::optional<std::vector<NodeChoice>> placeGang(ClusterState& state, PlacementPolicy& policy,
                                                 const GangRequest& gang, Rng& rng) {
  const ReplicaShape& shape = gang.shape;
  if (gang.replicas <= 0) return std::vector<NodeChoice>{};
  if (gang.replicas == 1) {
    auto c = policy.choose(state, shape, rng);
    if (!c) return std::nullopt;
    state.take(*c, shape);
    return std::vector<NodeChoice>{*c};
  }
  if (gang.same_label.empty() && shape.gpu_milli == 1000) {
    auto c = policy.choose(state, combined(shape, gang.replicas), rng);
    if (c) {
      std::vector<NodeChoice> out = split(*c, shape, gang.replicas);
      takeAll(state, out, shape);
      return out;
    }
  }
  // Spanning nodes. Without a label the index offers, for every count of
  // free GPUs, as many nodes as there are replicas: enough for the fewest
  // nodes. With a label, nodes are grouped by its value as they are looked
  // at, and the look stops at the first group that already holds the gang
  // on as few nodes as empty nodes of the largest size seen would.
  const ModelMask mask = state.modelMask(shape);
  std::map<std::string, std::vector<Candidate>> groups;
  const auto& nodes = state.nodes();
  if (gang.same_label.empty() && shape.gpu_count > 0) {
    auto& all = groups[""];
    for (std::size_t i :
         state.indexedCandidates(shape, mask, static_cast<std::size_t>(gang.replicas))) {
      int cap = replicaCapacity(state, i, shape, mask);
      if (cap > 0) all.push_back({i, std::min(cap, gang.replicas)});
    }
  } else {
    std::map<std::string, int> held;  // replicas each group holds
    int widest = 1;                   // most replicas an empty node seen could hold
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      int cap = replicaCapacity(state, i, shape, mask);
      if (cap <= 0) continue;
      std::string key;
      if (!gang.same_label.empty()) {
        auto it = nodes[i].info->labels.find(gang.same_label);
        if (it == nodes[i].info->labels.end()) continue;
        key = it->second;
      }
      if (shape.gpu_count > 0) {
        widest = std::max(widest, static_cast<int>(nodes[i].gpu_free.size()) / shape.gpu_count);
      }
      cap = std::min(cap, gang.replicas);
      auto& group = groups[key];
      group.push_back({i, cap});
      int& sum = held[key];
      sum += cap;
      const int fewest =
          (gang.replicas + std::min(widest, gang.replicas) - 1) / std::min(widest, gang.replicas);
      if (shape.gpu_count > 0 && sum >= gang.replicas && static_cast<int>(group.size()) <= fewest) {
        break;
      }
    }
  }
  std::vector<Candidate> best;
  for (auto& [key, cands] : groups) {
    std::vector<Candidate> chosen = fewestNodes(std::move(cands), gang.replicas);
    if (!chosen.empty() && (best.empty() || chosen.size() < best.size())) best = std::move(chosen);
  }
  if (best.empty()) return std::nullopt;
  std::vector<NodeChoice> out;
  for (const auto& c : best) {
    for (int k = 0; k < c.capacity && static_cast<int>(out.size()) < gang.replicas; ++k) {
      std::vector<int> usable = state.usableGpus(c.node, shape, mask);
      // Fullest usable GPUs first, so shared GPUs fill before fresh ones.
      std::stable_sort(usable.begin(), usable.end(), [&](int a, int b) {
        return nodes[c.node].gpu_free[static_cast<size_t>(a)] <
               nodes[c.node].gpu_free[static_cast<size_t>(b)];
      });
      usable.resize(static_cast<size_t>(shape.gpu_count));
      NodeChoice choice{c.node, std::move(usable)};
      state.take(choice, shape);
      out.push_back(std::move(choice));
    }
  }
  return out;
}

}  // namespace ty
