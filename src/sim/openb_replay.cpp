#include "sim/openb_replay.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/rng.h"
#include "core/fragmentation.h"

namespace ty {

ClusterSnapshot openbSnapshot(const std::vector<OpenbNode>& nodes) {
  ClusterSnapshot snap;
  snap.nodes.reserve(nodes.size());
  for (const OpenbNode& n : nodes) {
    NodeState s;
    s.info.name = n.name;
    s.info.cpus = Quantity::fromMilli(n.cpu_milli);
    s.info.memory_bytes = n.memory_mib << 20;
    for (int g = 0; g < n.gpus; ++g) {
      GpuInfo gpu;
      gpu.index = g;
      gpu.model = n.model;
      s.info.gpus.push_back(std::move(gpu));
    }
    snap.nodes.push_back(std::move(s));
  }
  return snap;
}

ReplicaShape openbShape(const OpenbPod& pod) {
  ReplicaShape s;
  s.gpu_count = pod.num_gpu;
  s.gpu_milli = pod.num_gpu == 0 ? 1000 : pod.gpu_milli;
  s.cpus = Quantity::fromMilli(pod.cpu_milli);
  s.memory_bytes = pod.memory_mib << 20;
  s.gpu_types = pod.gpu_spec;
  return s;
}

Workload openbWorkload(const std::vector<OpenbPod>& pods, double coverage) {
  std::vector<ReplicaShape> shapes;
  shapes.reserve(pods.size());
  for (const OpenbPod& p : pods) shapes.push_back(openbShape(p));
  return typicalWorkload(shapes, coverage);
}

OpenbRunResult replayOpenb(const ClusterSnapshot& cluster, const std::vector<OpenbPod>& pods,
                           const Workload& workload, PlacementPolicy& policy, double tune,
                           std::uint64_t seed) {
  OpenbRunResult out;
  for (const NodeState& n : cluster.nodes) {
    for (const GpuInfo& g : n.info.gpus) out.capacity_milli += g.healthy ? 1000 : 0;
  }

  // Order: by name, inflated, shuffled (the artifact's SortClusterPods and
  // TunePodsByNodeTotalResource).
  std::vector<const OpenbPod*> order;
  order.reserve(pods.size() * 2);
  for (const OpenbPod& p : pods) order.push_back(&p);
  std::sort(order.begin(), order.end(),
            [](const OpenbPod* a, const OpenbPod* b) { return a->name < b->name; });
  Rng rng(seed);
  std::int64_t requested = 0;
  for (const OpenbPod* p : order) requested += p->totalGpuMilli();
  const auto target = static_cast<std::int64_t>(tune * static_cast<double>(out.capacity_milli));
  const std::size_t original = order.size();
  bool any_gpu = requested > 0;
  while (any_gpu && original > 0 && requested < target) {
    const OpenbPod* p = order[rng.below(original)];
    order.push_back(p);
    requested += p->totalGpuMilli();
  }
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.below(i)]);

  ClusterState state(cluster);
  FragmentationMeasure measure(workload, state);
  std::vector<double> node_frag(state.nodes().size());
  double frag = 0;
  for (std::size_t i = 0; i < node_frag.size(); ++i) {
    node_frag[i] = measure.nodeFragMilli(state.nodes()[i]);
    frag += node_frag[i];
  }

  // Samples bucketed by rounded arrive ratio, as merge_alloc_discrete.py.
  const std::size_t buckets = kOpenbMaxArrivedPct + 2;
  std::vector<double> alloc_sum(buckets, 0), frag_sum(buckets, 0);
  std::vector<std::size_t> samples(buckets, 0);
  const double cap = static_cast<double>(out.capacity_milli);
  Rng policy_rng(seed * 0x9E3779B97F4A7C15ull + 1);
  std::int64_t arrived = 0, used = 0;
  for (const OpenbPod* p : order) {
    ReplicaShape shape = openbShape(*p);
    arrived += p->totalGpuMilli();
    if (auto choice = policy.choose(state, shape, policy_rng)) {
      state.take(*choice, shape);
      used += shape.gpu_count == 0 ? 0 : shape.totalGpuMilli();
      ++out.placed;
      frag -= node_frag[choice->node];
      node_frag[choice->node] = measure.nodeFragMilli(state.nodes()[choice->node]);
      frag += node_frag[choice->node];
    }
    if (cap <= 0) continue;
    const long k = std::lround(100.0 * static_cast<double>(arrived) / cap);
    if (k < 0 || k >= static_cast<long>(buckets)) continue;
    alloc_sum[static_cast<std::size_t>(k)] += 100.0 * static_cast<double>(used) / cap;
    frag_sum[static_cast<std::size_t>(k)] += 100.0 * frag / cap;
    ++samples[static_cast<std::size_t>(k)];
  }
  out.pods = order.size();

  const double nan = std::numeric_limits<double>::quiet_NaN();
  out.alloc_pct.assign(kOpenbMaxArrivedPct + 1, nan);
  out.frag_pct.assign(kOpenbMaxArrivedPct + 1, nan);
  for (std::size_t k = 0; k <= kOpenbMaxArrivedPct; ++k) {
    std::size_t from = k;
    if (samples[k] == 0) {
      if (k > 0 && samples[k - 1] > 0) {
        from = k - 1;
      } else if (samples[k + 1] > 0) {
        from = k + 1;
      } else {
        continue;
      }
    }
    out.alloc_pct[k] = alloc_sum[from] / static_cast<double>(samples[from]);
    out.frag_pct[k] = frag_sum[from] / static_cast<double>(samples[from]);
  }

  // Over-commit check: what is free now plus what was handed out must be
  // the capacity, and nothing may be negative.
  std::int64_t free_milli = 0;
  for (const NodeFree& n : state.nodes()) {
    if (n.free_cpus.milli() < 0 || n.free_memory < 0) out.consistent = false;
    for (std::size_t g = 0; g < n.gpu_free.size(); ++g) {
      if (n.info->gpus[g].healthy && n.gpu_free[g] < 0) out.consistent = false;
      free_milli += std::max(n.gpu_free[g], 0);
    }
  }
  if (free_milli + used != out.capacity_milli) out.consistent = false;
  return out;
}

}  // namespace ty
