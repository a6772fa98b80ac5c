// The CPU cost of one node-exporter cycle on an 8-GPU node: sample every GPU
// through NVML (the fake library of tests/fake_nvml, loaded with dlopen),
// update the GPU series and serialise the registry as one scrape would.
// Numbers are reported, never asserted (docs/observability.md).
//
// The fake answers from memory, so this is Trainyard's share of the cost;
// a real driver adds its own time per NVML call (ioctl round trips).
#include <benchmark/benchmark.h>
#include <prometheus/registry.h>
#include <stdlib.h>

#include <memory>
#include <string>

#include "gpu/gpu_sampler.h"
#include "metrics/exposition.h"
#include "metrics/gpu_metrics.h"

#ifndef FAKE_NVML_LIB
#error "FAKE_NVML_LIB must name the fake NVML library (bench/CMakeLists.txt)"
#endif

namespace ty {
namespace {

constexpr int kGpus = 8;

// Eight busy A100s: two jobs of four GPUs, each GPU with one process of its
// job and every second GPU with a second, jobless one.
void scriptBusyNode() {
  setenv("FAKE_NVML_GPUS", "8xA100-80GB", 1);
  setenv("FAKE_NVML_GPU_UTIL", "97,95,99,90,12,0,55,100", 1);
  setenv("FAKE_NVML_MEM_UTIL", "41,40,44,38,3,0,20,47", 1);
  setenv("FAKE_NVML_MEMORY_USED_MIB", "70000,69000,71000,70500,2000,0,30000,79000", 1);
  setenv("FAKE_NVML_POWER_MW", "390000,385000,401000,370000,90000,60000,250000,399000", 1);
  setenv("FAKE_NVML_ECC_SBE", "0,0,3,0,0,0,0,1", 1);
  std::string processes;
  for (int g = 0; g < kGpus; ++g) {
    if (g > 0) processes += ";";
    processes += std::to_string(1000 + g) + ":60000";
    if (g % 2 == 0) processes += "," + std::to_string(2000 + g) + ":512";
  }
  setenv("FAKE_NVML_PROCESSES", processes.c_str(), 1);
}

GpuAttribution twoJobs() {
  GpuAttribution a;
  for (int g = 0; g < kGpus; ++g) {
    std::string job = g < 4 ? "1041" : "1042";
    a.holders[g] = {job, g < 4 ? "vision" : "speech", g < 4 ? "ada" : "grace"};
    a.process_jobs[1000 + g] = job;
  }
  return a;
}

GpuSampler openSampler(benchmark::State& state) {
  scriptBusyNode();
  Result<std::unique_ptr<GpuReader>> reader = openNvmlGpuReader(FAKE_NVML_LIB);
  if (!reader.isOk()) {
    state.SkipWithError(reader.status().toString().c_str());
    return GpuSampler(newFakeGpuReader({}));
  }
  return GpuSampler(std::move(*reader));
}

// What the exporter does once per interval, plus one scrape.
void BM_Cycle(benchmark::State& state) {
  GpuSampler sampler = openSampler(state);
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "gpu-node-01");
  GpuAttribution who = twoJobs();
  std::size_t bytes = 0;
  for (auto _ : state) {
    NodeSample sample = sampler.sample();
    metrics.update(sample, who);
    std::string text = serializeText(registry);
    bytes = text.size();
    benchmark::DoNotOptimize(text);
  }
  state.counters["exposition_bytes"] = static_cast<double>(bytes);
  state.counters["series"] = static_cast<double>(metrics.seriesCount());
}
BENCHMARK(BM_Cycle)->Unit(benchmark::kMicrosecond);

// The parts of a cycle on their own.
void BM_Sample(benchmark::State& state) {
  GpuSampler sampler = openSampler(state);
  for (auto _ : state) benchmark::DoNotOptimize(sampler.sample());
}
BENCHMARK(BM_Sample)->Unit(benchmark::kMicrosecond);

void BM_Update(benchmark::State& state) {
  NodeSample sample = openSampler(state).sample();
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "gpu-node-01");
  GpuAttribution who = twoJobs();
  for (auto _ : state) metrics.update(sample, who);
}
BENCHMARK(BM_Update)->Unit(benchmark::kMicrosecond);

void BM_Serialise(benchmark::State& state) {
  NodeSample sample = openSampler(state).sample();
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "gpu-node-01");
  metrics.update(sample, twoJobs());
  for (auto _ : state) benchmark::DoNotOptimize(serializeText(registry));
}
BENCHMARK(BM_Serialise)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ty
