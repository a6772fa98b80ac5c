// Cost of one scheduling pass of the pure core as the queue and the
// cluster grow. Run: build/bench/schedule_bench
#include <benchmark/benchmark.h>

#include "core/schedule.h"

namespace ty {
namespace {

ClusterSnapshot cluster(int nodes, int gpus_per_node) {
  ClusterSnapshot c;
  for (int n = 0; n < nodes; ++n) {
    NodeState s;
    s.info.name = "node" + std::to_string(n);
    s.info.cpus = Quantity::whole(128);
    s.info.memory_bytes = 1LL << 40;
    for (int g = 0; g < gpus_per_node; ++g) {
      s.info.gpus.push_back({g, "GPU-" + std::to_string(n) + "-" + std::to_string(g), "A100"});
    }
    // Half of each node is busy, in a scattered pattern.
    for (int g = 0; g < gpus_per_node; g += 2) s.gpu_used_milli[g] = 1000;
    c.nodes.push_back(std::move(s));
  }
  return c;
}

void BM_SchedulePass(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pending = static_cast<int>(state.range(1));
  ClusterSnapshot c = cluster(nodes, 8);
  QueueSnapshot q;
  for (int i = 0; i < pending; ++i) {
    PendingJob j;
    j.id = JobId(i + 1);
    j.priority = i % 5;
    j.submitted = i;
    j.per_replica.gpus = Quantity::whole(1 + (i % 4));
    j.replicas = 1 + (i % 3 == 0 ? 1 : 0);
    q.pending.push_back(j);
  }
  Rng rng(1);
  for (auto _ : state) {
    Decision d = schedule(c, q, PolicyConfig{}, 0, rng);
    benchmark::DoNotOptimize(d);
  }
  state.SetItemsProcessed(state.iterations() * pending);
}
BENCHMARK(BM_SchedulePass)
    ->Args({1, 100})
    ->Args({1, 10'000})
    ->Args({100, 1'000})
    ->Args({1'000, 10'000})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ty
