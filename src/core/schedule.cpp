#include "core/schedule.h"

#include <algorithm>
#include <set>

#include "common/units.h"

namespace ty {
namespace {

// What is free on a node while a pass places jobs on it.
struct FreeNode {
  const NodeInfo* info;
  std::set<int> free_gpus;
  Quantity free_cpus;
  std::int64_t free_memory;
};

std::vector<FreeNode> freeNodes(const ClusterSnapshot& cluster) {
  std::vector<FreeNode> out;
  out.reserve(cluster.nodes.size());
  for (const auto& n : cluster.nodes) {
    FreeNode f{&n.info, {}, n.info.cpus - n.used_cpus, n.info.memory_bytes - n.used_memory};
    for (const auto& g : n.info.gpus) {
      if (g.healthy && !n.gpu_used_milli.count(g.index)) f.free_gpus.insert(g.index);
    }
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<int> matchingFree(const FreeNode& n, const Resources& r) {
  std::vector<int> out;
  for (const auto& g : n.info->gpus) {
    if (n.free_gpus.count(g.index) && gpuModelMatches(r.gpu_types, g.model)) {
      out.push_back(g.index);
    }
  }
  return out;
}

std::int64_t countMatchingFree(const FreeNode& n, const Resources& r) {
  if (r.gpu_types.empty()) return static_cast<std::int64_t>(n.free_gpus.size());
  return static_cast<std::int64_t>(matchingFree(n, r).size());
}

bool fitsBesidesGpus(const FreeNode& n, const Resources& r) {
  if (!r.cpus.isZero() && n.free_cpus < r.cpus) return false;
  return r.memory_bytes <= 0 || n.free_memory >= r.memory_bytes;
}

// What one replica took from a node, to give it back if the gang fails.
struct Taken {
  FreeNode* node;
  std::vector<int> gpus;
};

void giveBack(const std::vector<Taken>& taken, const Resources& r) {
  for (const auto& t : taken) {
    t.node->free_gpus.insert(t.gpus.begin(), t.gpus.end());
    if (!r.cpus.isZero()) t.node->free_cpus += r.cpus;
    if (r.memory_bytes > 0) t.node->free_memory += r.memory_bytes;
  }
}

// Places every replica or none; on success `nodes` holds the allocation.
std::optional<std::vector<ReplicaPlacement>> placeGang(std::vector<FreeNode>& nodes,
                                                       const Resources& r, int replicas) {
  std::vector<ReplicaPlacement> out;
  std::vector<Taken> taken;
  const std::int64_t want = r.gpus.wholeUnits();
  for (int i = 0; i < replicas; ++i) {
    // Best fit: the node with the fewest matching free GPUs that still fit,
    // then the fewest free CPUs, then the name, so big blocks stay whole.
    FreeNode* best = nullptr;
    std::int64_t best_free = 0;
    for (auto& n : nodes) {
      if (static_cast<std::int64_t>(n.free_gpus.size()) < want || !fitsBesidesGpus(n, r)) {
        continue;
      }
      std::int64_t free = countMatchingFree(n, r);
      if (free < want) continue;
      if (!best || free < best_free || (free == best_free && n.free_cpus < best->free_cpus) ||
          (free == best_free && n.free_cpus == best->free_cpus &&
           n.info->name < best->info->name)) {
        best = &n;
        best_free = free;
      }
    }
    if (!best) {
      giveBack(taken, r);
      return std::nullopt;
    }
    std::vector<int> candidates = matchingFree(*best, r);
    ReplicaPlacement p{best->info->name, {}};
    for (std::int64_t k = 0; k < want; ++k) {
      p.gpus.push_back(candidates[k]);
      best->free_gpus.erase(candidates[k]);
    }
    if (!r.cpus.isZero()) best->free_cpus -= r.cpus;
    if (r.memory_bytes > 0) best->free_memory -= r.memory_bytes;
    taken.push_back({best, p.gpus});
    out.push_back(std::move(p));
  }
  return out;
}

std::string gpuWord(std::int64_t n) { return n == 1 ? "GPU" : "GPUs"; }

std::string typeSuffix(const Resources& r) {
  if (r.gpu_types.empty()) return "";
  std::string out = " of type ";
  for (size_t i = 0; i < r.gpu_types.size(); ++i) {
    if (i) out += " or ";
    out += r.gpu_types[i];
  }
  return out;
}

// Why a job does not fit now, in words, naming the closest node.
std::string explainWait(const std::vector<FreeNode>& nodes, const PendingJob& job) {
  const Resources& r = job.per_replica;
  std::string need;
  if (job.replicas > 1) need = std::to_string(job.replicas) + " replicas of ";
  std::int64_t g = r.gpus.wholeUnits();
  if (nodes.empty()) return "Waiting: no nodes are available";
  // Name the node with the most matching free GPUs.
  const FreeNode* most = &nodes[0];
  std::int64_t free = countMatchingFree(*most, r);
  for (const auto& n : nodes) {
    std::int64_t f = countMatchingFree(n, r);
    if (f > free) {
      most = &n;
      free = f;
    }
  }
  if (free < g) {
    return "Waiting: needs " + need + std::to_string(g) + " " + gpuWord(g) + typeSuffix(r) + ", " +
           std::to_string(free) + " free on node " + most->info->name;
  }
  if (!r.cpus.isZero() && most->free_cpus < r.cpus) {
    return "Waiting: needs " + need + r.cpus.toString() + " CPUs, " + most->free_cpus.toString() +
           " free on node " + most->info->name;
  }
  if (r.memory_bytes > 0 && most->free_memory < r.memory_bytes) {
    return "Waiting: needs " + need + formatMemory(r.memory_bytes) + " memory, " +
           formatMemory(std::max<std::int64_t>(0, most->free_memory)) + " free on node " +
           most->info->name;
  }
  return "Waiting: needs " + need + std::to_string(g) + " " + gpuWord(g) + typeSuffix(r) +
         " per replica; not all replicas fit at once (" + std::to_string(free) + " free on node " +
         most->info->name + ")";
}

}  // namespace

Decision schedule(const ClusterSnapshot& cluster, const QueueSnapshot& queues,
                  const PolicyConfig& /*config*/, Timestamp /*now*/, Rng& /*rng*/) {
  Decision d;
  std::vector<const PendingJob*> order;
  order.reserve(queues.pending.size());
  for (const auto& p : queues.pending) order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const PendingJob* a, const PendingJob* b) {
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->submitted != b->submitted) return a->submitted < b->submitted;
    return a->id < b->id;
  });
  std::vector<FreeNode> nodes = freeNodes(cluster);
  int position = 0;
  for (const PendingJob* job : order) {
    auto placed = placeGang(nodes, job->per_replica, job->replicas);
    if (placed) {
      d.placements.push_back({job->id, std::move(*placed)});
    } else {
      d.waiting.push_back({job->id, ++position, explainWait(nodes, *job)});
    }
  }
  return d;
}

Status checkFeasible(const JobSpec& spec, const std::vector<NodeInfo>& nodes) {
  // Capacity, not health: a job that needs a GPU that is unhealthy now
  // waits for it rather than being refused.
  ClusterSnapshot empty;
  for (const auto& n : nodes) {
    NodeState state{n, {}, Quantity(), 0};
    for (auto& g : state.info.gpus) g.healthy = true;
    empty.nodes.push_back(std::move(state));
  }
  std::vector<FreeNode> free = freeNodes(empty);
  if (placeGang(free, spec.resources, spec.replicas)) return Status::ok();

  const Resources& r = spec.resources;
  std::int64_t g = r.gpus.wholeUnits();
  std::int64_t largest = 0;
  std::int64_t matching = 0;
  std::set<std::string> models;
  for (const auto& n : nodes) {
    std::int64_t count = 0;
    for (const auto& gpu : n.gpus) {
      models.insert(gpu.model);
      if (gpuModelMatches(r.gpu_types, gpu.model)) ++count;
    }
    largest = std::max(largest, count);
    matching += count;
  }
  if (!r.gpu_types.empty() && matching == 0 && g > 0) {
    std::string have;
    for (const auto& m : models) have += (have.empty() ? "" : ", ") + m;
    return Status::infeasible("no node has GPUs" + typeSuffix(r) +
                                  " (GPU models here: " + (have.empty() ? "none" : have) + ")",
                              "resources.gpu_type");
  }
  if (g > largest) {
    return Status::infeasible("needs " + std::to_string(g) + " " + gpuWord(g) + typeSuffix(r) +
                                  " per replica; the largest node has " + std::to_string(largest),
                              "resources.gpus");
  }
  Quantity max_cpus;
  std::int64_t max_mem = 0;
  for (const auto& n : nodes) {
    max_cpus = std::max(max_cpus, n.cpus);
    max_mem = std::max(max_mem, n.memory_bytes);
  }
  if (r.cpus > max_cpus) {
    return Status::infeasible("needs " + r.cpus.toString() +
                                  " CPUs per replica; the largest node has " + max_cpus.toString(),
                              "resources.cpus");
  }
  if (r.memory_bytes > max_mem) {
    return Status::infeasible("needs " + formatMemory(r.memory_bytes) +
                                  " per replica; the largest node has " + formatMemory(max_mem),
                              "resources.memory");
  }
  return Status::infeasible("needs " + std::to_string(spec.replicas) + " replicas of " +
                                std::to_string(g) + " " + gpuWord(g) + typeSuffix(r) +
                                "; the cluster has " + std::to_string(matching) +
                                " such GPUs in all",
                            "replicas");
}

}  // namespace ty
