// Placement throughput on a large cluster: placements per second for the
// index-backed policies (best-fit, trainyard) and the scanning ones, on
// 10,000 nodes x 8 GPUs. Numbers are reported, never asserted
// (docs/benchmarks.md).
#include <benchmark/benchmark.h>

#include "core/fragmentation.h"
#include "core/placement.h"

namespace ty {
namespace {

ClusterSnapshot bigCluster(int nodes) {
  ClusterSnapshot snap;
  snap.nodes.reserve(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    NodeState n;
    n.info.name = "node-" + std::to_string(i);
    n.info.cpus = Quantity::whole(96);
    n.info.memory_bytes = std::int64_t{768} << 30;
    for (int g = 0; g < 8; ++g) n.info.gpus.push_back({g, "", i % 4 ? "H100" : "A100", 0, true});
    snap.nodes.push_back(std::move(n));
  }
  return snap;
}

ReplicaShape shape(int gpus, int milli, int cpus) {
  ReplicaShape s;
  s.gpu_count = gpus;
  s.gpu_milli = milli;
  s.cpus = Quantity::whole(cpus);
  s.memory_bytes = std::int64_t{cpus} << 32;
  return s;
}

// Places a stream of mixed replicas (1, 2, 4 and 8 whole GPUs, and
// optionally half GPUs) until the cluster is half full, then starts over
// on a fresh state; reports placements per second.
void placeStream(benchmark::State& st, const char* policy_name, bool sharing) {
  const int nodes = static_cast<int>(st.range(0));
  ClusterSnapshot snap = bigCluster(nodes);
  std::vector<ReplicaShape> mix = {shape(1, 1000, 8), shape(2, 1000, 16), shape(1, 1000, 4),
                                   shape(4, 1000, 32), shape(8, 1000, 64)};
  if (sharing) mix.push_back(shape(1, 500, 2));
  Workload w;
  for (const auto& s : mix) w.push_back({s, 1.0 / static_cast<double>(mix.size())});
  auto policy = std::move(makePlacementPolicy(policy_name, w).value());
  Rng rng(1);
  std::optional<ClusterState> state;
  std::int64_t placed_gpu = 0, placements = 0;
  const std::int64_t half = std::int64_t{nodes} * 8 * 1000 / 2;
  std::size_t k = 0;
  for (auto _ : st) {
    if (!state || placed_gpu >= half) {
      st.PauseTiming();
      state.emplace(snap);
      placed_gpu = 0;
      st.ResumeTiming();
    }
    const ReplicaShape& s = mix[k++ % mix.size()];
    auto c = policy->choose(*state, s, rng);
    if (c) {
      state->take(*c, s);
      placed_gpu += s.totalGpuMilli();
    }
    ++placements;
  }
  st.counters["placements/s"] =
      benchmark::Counter(static_cast<double>(placements), benchmark::Counter::kIsRate);
}

void BM_BestFit(benchmark::State& st) { placeStream(st, "best-fit", false); }
void BM_BestFitSharing(benchmark::State& st) { placeStream(st, "best-fit", true); }
void BM_Trainyard(benchmark::State& st) { placeStream(st, "trainyard", false); }
void BM_TrainyardSharing(benchmark::State& st) { placeStream(st, "trainyard", true); }
void BM_Fgd(benchmark::State& st) { placeStream(st, "fgd", false); }

BENCHMARK(BM_BestFit)->Arg(10000);
BENCHMARK(BM_BestFitSharing)->Arg(10000);
BENCHMARK(BM_Trainyard)->Arg(10000);
BENCHMARK(BM_TrainyardSharing)->Arg(10000);
BENCHMARK(BM_Fgd)->Arg(1213)->Arg(10000)->Iterations(2000);

}  // namespace
}  // namespace ty
