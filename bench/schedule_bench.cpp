// Cost of one scheduling pass of the pure core as the queue and the
// cluster grow. Numbers are reported, never asserted (docs/benchmarks.md).
// Run: build/bench/schedule_bench [--benchmark_filter=Full]
//
// The synthetic cluster: nodes of 8 GPUs, half A100 and half H100. The
// synthetic queue: 20 queues in 10 cohorts, jobs of mixed shapes (0.25 to
// 64 GPUs, a quarter pinned to each model), four priorities.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <vector>

#include "core/placement.h"
#include "core/schedule.h"

namespace ty {
namespace {

constexpr int kQueues = 20;

ClusterSnapshot cluster(int nodes) {
  ClusterSnapshot c;
  c.nodes.reserve(static_cast<size_t>(nodes));
  for (int n = 0; n < nodes; ++n) {
    NodeState s;
    s.info.name = "node" + std::to_string(n);
    s.info.cpus = Quantity::whole(128);
    s.info.memory_bytes = 1LL << 40;
    s.info.labels["rack"] = "r" + std::to_string(n / 32);
    const char* model = n % 2 ? "NVIDIA H100-80GB" : "NVIDIA A100-80GB";
    for (int g = 0; g < 8; ++g) {
      s.info.gpus.push_back({g, "GPU-" + std::to_string(n) + "-" + std::to_string(g), model});
    }
    c.nodes.push_back(std::move(s));
  }
  return c;
}

std::vector<QueueConfig> queues(int nodes) {
  std::vector<QueueConfig> out;
  const std::int64_t share = static_cast<std::int64_t>(nodes) * 8 / kQueues;
  for (int q = 0; q < kQueues; ++q) {
    QueueConfig c;
    c.name = "q" + std::to_string(q);
    c.project = c.name;
    c.cohort = "cohort" + std::to_string(q / 2);
    c.weight = 1 + q % 3;
    c.quotas["gpu"] = Quota::units(share);
    out.push_back(std::move(c));
  }
  return out;
}

// Job i of a mixed workload: mostly small, a few large multi-node gangs.
PendingJob mixedJob(int i) {
  PendingJob j;
  j.id = JobId(i + 1);
  j.priority = i % 4;
  j.submitted = i;
  j.queue = "q" + std::to_string(i % kQueues);
  j.max_runtime = (i % 3 == 0) ? 0 : 3'600'000LL * (1 + i % 8);
  const int kind = (i * 7919) % 100;
  if (kind < 15) {
    j.per_replica.gpus = Quantity::fromMilli(250);
  } else if (kind < 30) {
    j.per_replica.gpus = Quantity::fromMilli(500);
  } else if (kind < 55) {
    j.per_replica.gpus = Quantity::whole(1);
  } else if (kind < 70) {
    j.per_replica.gpus = Quantity::whole(2);
  } else if (kind < 82) {
    j.per_replica.gpus = Quantity::whole(4);
  } else if (kind < 92) {
    j.per_replica.gpus = Quantity::whole(8);
  } else {
    // 16, 32 or 64 GPUs: gangs of 8-GPU replicas, some within one rack.
    j.per_replica.gpus = Quantity::whole(8);
    j.replicas = 2 << (kind % 3);
    if (kind % 2) j.same_label = "rack";
  }
  j.per_replica.cpus = Quantity::whole(4);
  if (i % 4 == 1) j.per_replica.gpu_types = {"A100"};
  if (i % 4 == 2) j.per_replica.gpu_types = {"H100"};
  return j;
}

// Marks `fraction` of each node's GPUs busy with 2-GPU running jobs.
void fill(ClusterSnapshot& c, QueueSnapshot& q, double fraction, Timestamp now) {
  std::int64_t id = 10'000'000;
  const int busy = static_cast<int>(8 * fraction);
  for (auto& n : c.nodes) {
    for (int g = 0; g + 1 < busy + 1 && g < 8; g += 2) {
      n.gpu_used_milli[g] = 1000;
      n.gpu_used_milli[g + 1] = 1000;
      RunningJob r;
      r.id = JobId(++id);
      r.queue = "q" + std::to_string(id % kQueues);
      r.per_replica.gpus = Quantity::whole(2);
      r.replicas = {{n.info.name, {g, g + 1}, 1000}};
      r.started_at = now - 60'000 * (id % 90);
      r.max_runtime = (id % 5 == 0) ? 0 : 3'600'000LL * (1 + id % 12);
      q.running.push_back(std::move(r));
    }
  }
}

void p99Stats(benchmark::internal::Benchmark* b) {
  b->ComputeStatistics("p99", [](const std::vector<double>& v) {
    std::vector<double> s = v;
    std::sort(s.begin(), s.end());
    return s[std::min(s.size() - 1, static_cast<size_t>(0.99 * static_cast<double>(s.size())))];
  });
}

// A full pass over an idle cluster: how fast jobs are placed.
void BM_FullPass(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pending = static_cast<int>(state.range(1));
  ClusterSnapshot c = cluster(nodes);
  QueueSnapshot q;
  for (int i = 0; i < pending; ++i) q.pending.push_back(mixedJob(i));
  PolicyConfig config;
  config.queues = queues(nodes);
  auto policy = std::move(makePlacementPolicy("best-fit", {})).value();
  config.placement = policy.get();
  Rng rng(1);
  std::size_t placed = 0;
  for (auto _ : state) {
    Decision d = schedule(c, q, config, 1'000'000'000, rng);
    placed = d.placements.size();
    benchmark::DoNotOptimize(d);
  }
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["placements_per_s"] =
      benchmark::Counter(static_cast<double>(placed) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_FullPass)
    ->Args({100, 1'000})
    ->Args({1'000, 10'000})
    ->Args({10'000, 100'000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

// A pass over a busy cluster (half of it held by running jobs with
// max_runtime, so backfill reserves) with a full backlog.
void BM_BusyBacklog(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int pending = static_cast<int>(state.range(1));
  const Timestamp now = 1'000'000'000;
  ClusterSnapshot c = cluster(nodes);
  QueueSnapshot q;
  fill(c, q, 0.5, now);
  for (int i = 0; i < pending; ++i) q.pending.push_back(mixedJob(i));
  PolicyConfig config;
  config.queues = queues(nodes);
  auto policy = std::move(makePlacementPolicy("best-fit", {})).value();
  config.placement = policy.get();
  Rng rng(1);
  std::size_t placed = 0;
  for (auto _ : state) {
    Decision d = schedule(c, q, config, now, rng);
    placed = d.placements.size();
    benchmark::DoNotOptimize(d);
  }
  state.counters["placed"] = static_cast<double>(placed);
  state.counters["running"] = static_cast<double>(q.running.size());
}
BENCHMARK(BM_BusyBacklog)->Args({10'000, 100'000})->Unit(benchmark::kMillisecond)->UseRealTime();

// The steady state: a full cluster (every GPU held by a running job) and a
// few new jobs, with or without a backlog that cannot fit. Goal: p99 < 50 ms.
void BM_Incremental(benchmark::State& state) {
  const int nodes = static_cast<int>(state.range(0));
  const int backlog = static_cast<int>(state.range(1));
  const Timestamp now = 1'000'000'000;
  ClusterSnapshot c = cluster(nodes);
  QueueSnapshot q;
  fill(c, q, 1.0, now);
  // A few GPUs come free: the newest running jobs on every 500th node end.
  for (size_t n = 0; n < c.nodes.size(); n += 500) {
    c.nodes[n].gpu_used_milli.erase(6);
    c.nodes[n].gpu_used_milli.erase(7);
  }
  for (int i = 0; i < backlog; ++i) q.pending.push_back(mixedJob(i));
  for (int i = 0; i < 5; ++i) {
    PendingJob j = mixedJob(backlog + i);
    j.per_replica.gpus = Quantity::whole(1);
    j.replicas = 1;
    j.same_label.clear();
    j.priority = 3;
    q.pending.push_back(j);
  }
  PolicyConfig config;
  config.queues = queues(nodes);
  auto policy = std::move(makePlacementPolicy("best-fit", {})).value();
  config.placement = policy.get();
  Rng rng(1);
  for (auto _ : state) {
    Decision d = schedule(c, q, config, now, rng);
    benchmark::DoNotOptimize(d);
  }
}
BENCHMARK(BM_Incremental)
    ->Args({10'000, 0})
    ->Args({10'000, 100'000})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Repetitions(20)
    ->Apply(p99Stats);

}  // namespace
}  // namespace ty
