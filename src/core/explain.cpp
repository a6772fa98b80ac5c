#include "core/explain.h"

#include <algorithm>

#include "common/units.h"

namespace ty {
namespace {

std::string typeSuffix(const ReplicaShape& s) {
  if (s.gpu_types.empty()) return "";
  std::string out = " of type ";
  for (size_t i = 0; i < s.gpu_types.size(); ++i) {
    if (i) out += " or ";
    out += s.gpu_types[i];
  }
  return out;
}

bool labelsMatch(const NodeInfo& n, const ReplicaShape& s) {
  for (const auto& [k, v] : s.node_selector) {
    auto it = n.labels.find(k);
    if (it == n.labels.end() || it->second != v) return false;
  }
  return true;
}

std::string needPrefix(int replicas) {
  return replicas > 1 ? std::to_string(replicas) + " replicas of " : "";
}

}  // namespace

std::string describeGpus(const ReplicaShape& s) {
  Quantity per = Quantity::fromMilli(s.totalGpuMilli());
  if (s.gpu_count == 0) per = Quantity();
  std::string word = per == Quantity::whole(1) ? "GPU" : "GPUs";
  return per.toString() + " " + word + typeSuffix(s);
}

std::string explainCapacity(const ClusterState& state, const ReplicaShape& shape, int replicas) {
  const auto& nodes = state.nodes();
  if (nodes.empty()) return "Waiting: no nodes are available";
  // The node with the most usable GPUs among those the labels allow.
  const ModelMask mask = state.modelMask(shape);
  const NodeFree* most = nullptr;
  std::int64_t free = -1;
  for (const NodeFree& n : nodes) {
    if (!labelsMatch(*n.info, shape)) continue;
    std::int64_t f = 0;
    for (std::size_t p = 0; p < n.gpu_free.size(); ++p) {
      if (n.gpu_free[p] >= shape.gpu_milli && mask[static_cast<std::size_t>(n.gpu_model[p])]) ++f;
    }
    if (f > free) {
      most = &n;
      free = f;
    }
  }
  if (!most) {
    std::string sel;
    for (const auto& [k, v] : shape.node_selector) sel += (sel.empty() ? "" : ", ") + k + "=" + v;
    return "Waiting: no node has the labels " + sel;
  }
  const std::string need = needPrefix(replicas);
  const std::string& name = most->info->name;
  if (free < shape.gpu_count) {
    return "Waiting: needs " + need + describeGpus(shape) + ", " + std::to_string(free) +
           " free on node " + name;
  }
  if (!shape.cpus.isZero() && most->free_cpus < shape.cpus) {
    return "Waiting: needs " + need + shape.cpus.toString() + " CPUs, " +
           std::max(Quantity(), most->free_cpus).toString() + " free on node " + name;
  }
  if (shape.memory_bytes > 0 && most->free_memory < shape.memory_bytes) {
    return "Waiting: needs " + need + formatMemory(shape.memory_bytes) + " memory, " +
           formatMemory(std::max<std::int64_t>(0, most->free_memory)) + " free on node " + name;
  }
  return "Waiting: needs " + need + describeGpus(shape) +
         " per replica; not all replicas fit at once (" + std::to_string(free) + " free on node " +
         name + ")";
}

std::string explainReserved(const ReplicaShape& shape, int replicas, JobId holder) {
  return "Waiting: needs " + needPrefix(replicas) + describeGpus(shape) +
         "; the free ones are reserved by backfill for job " + std::to_string(holder.value()) +
         ", first in line";
}

std::string explainPreempting(int victims) {
  return "Waiting for " + std::to_string(victims) + " preempted " +
         (victims == 1 ? "job" : "jobs") + " to stop";
}

}  // namespace ty
