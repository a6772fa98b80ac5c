#include "core/fragmentation.h"

#include <algorithm>
#include <map>
#include <tuple>

namespace ty {

Workload typicalWorkload(const std::vector<ReplicaShape>& replicas, double coverage) {
  struct Count {
    ReplicaShape shape;
    std::size_t count = 0;
    std::size_t first = 0;
  };
  // Key as the artifact's PodResource: CPU, per-GPU milli, GPU count, type.
  using Key = std::tuple<std::int64_t, int, int, std::vector<std::string>>;
  std::map<Key, Count> counts;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    const ReplicaShape& r = replicas[i];
    int milli = r.gpu_count == 0 ? 0 : r.gpu_milli;
    Key key{r.cpus.milli(), milli, r.gpu_count, r.gpu_types};
    auto [it, inserted] = counts.try_emplace(key);
    if (inserted) {
      it->second.shape = r;
      it->second.shape.memory_bytes = 0;
      it->second.shape.node_selector.clear();
      it->second.first = i;
    }
    ++it->second.count;
  }
  std::vector<Count> sorted;
  sorted.reserve(counts.size());
  for (auto& [k, c] : counts) sorted.push_back(std::move(c));
  std::sort(sorted.begin(), sorted.end(), [](const Count& a, const Count& b) {
    return a.count != b.count ? a.count > b.count : a.first < b.first;
  });
  Workload all;
  for (const Count& c : sorted) all.push_back({c.shape, static_cast<double>(c.count)});
  return typicalShapes(all, coverage);
}

Workload typicalShapes(const Workload& workload, double coverage) {
  std::vector<std::size_t> order(workload.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return workload[a].weight > workload[b].weight;
  });
  double total = 0;
  for (const WorkloadShape& w : workload) total += w.weight;
  const double wanted = coverage * total;
  double covered = 0;
  Workload out;
  for (std::size_t i : order) {
    if (covered >= wanted && !out.empty()) break;
    covered += workload[i].weight;
    out.push_back(workload[i]);
  }
  for (WorkloadShape& w : out) w.weight /= covered;
  return out;
}

FragmentationMeasure::FragmentationMeasure(const Workload& workload, const ClusterState& state) {
  shapes_.reserve(workload.size());
  for (const WorkloadShape& w : workload) {
    Shape s;
    s.gpu_count = w.shape.gpu_count;
    s.gpu_milli = w.shape.gpu_count == 0 ? 0 : w.shape.gpu_milli;
    s.cpu_milli = w.shape.cpus.milli();
    s.models = state.modelMask(w.shape);
    s.weight = w.weight;
    shapes_.push_back(std::move(s));
  }
}

double FragmentationMeasure::fragMilli(const int* gpu_free, const int* gpu_model, std::size_t gpus,
                                       std::int64_t free_cpu_milli) const {
  std::int64_t idle = 0;
  for (std::size_t i = 0; i < gpus; ++i) idle += std::max(gpu_free[i], 0);
  if (idle == 0) return 0;
  double frag = 0;
  for (const Shape& s : shapes_) {
    if (s.gpu_count == 0 || free_cpu_milli < s.cpu_milli) {
      frag += s.weight * static_cast<double>(idle);
      continue;
    }
    int usable = 0;
    std::int64_t stranded = 0;
    for (std::size_t i = 0; i < gpus; ++i) {
      int f = std::max(gpu_free[i], 0);
      if (f >= s.gpu_milli && s.models[static_cast<std::size_t>(gpu_model[i])]) {
        ++usable;
      } else {
        stranded += f;
      }
    }
    frag += s.weight * static_cast<double>(usable >= s.gpu_count ? stranded : idle);
  }
  return frag;
}

double FragmentationMeasure::clusterFragMilli(const ClusterState& state) const {
  double total = 0;
  for (const NodeFree& n : state.nodes()) total += nodeFragMilli(n);
  return total;
}

double FragmentationMeasure::fragMilliAfter(const NodeFree& node, const ReplicaShape& shape,
                                            const std::vector<int>& positions) const {
  // Nodes have a handful of GPUs: a stack copy keeps this allocation-free.
  constexpr std::size_t kStack = 16;
  int local[kStack];
  std::vector<int> heap;
  int* free = local;
  if (node.gpu_free.size() > kStack) {
    heap.resize(node.gpu_free.size());
    free = heap.data();
  }
  std::copy(node.gpu_free.begin(), node.gpu_free.end(), free);
  for (int p : positions) free[static_cast<std::size_t>(p)] -= shape.gpu_milli;
  return fragMilli(free, node.gpu_model.data(), node.gpu_free.size(),
                   node.free_cpus.milli() - shape.cpus.milli());
}

}  // namespace ty
