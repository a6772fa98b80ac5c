#include "metrics/gpu_metrics.h"

#include <optional>
#include <string>
#include <utility>

#include "metrics/families.h"

namespace ty {
namespace {

constexpr std::int64_t kMib = std::int64_t{1} << 20;

template <typename T>
std::optional<double> asDouble(const std::optional<T>& v) {
  if (!v) return std::nullopt;
  return static_cast<double>(*v);
}

// DCGM reports framebuffer memory in whole MiB.
std::optional<double> mib(const std::optional<std::int64_t>& bytes) {
  if (!bytes) return std::nullopt;
  return static_cast<double>(*bytes / kMib);
}

struct GaugeSpec {
  const char* name;
  const char* help;
  std::optional<double> (*value)(const GpuSample&);
};

// The DCGM exporter's names and help texts (its default counters).
const GaugeSpec kGpuGauges[] = {
    {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).",
     [](const GpuSample& s) { return s.gpu_util_percent; }},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).",
     [](const GpuSample& s) { return s.mem_copy_util_percent; }},
    {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).",
     [](const GpuSample& s) { return mib(s.memory_used_bytes); }},
    {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).",
     [](const GpuSample& s) { return mib(s.memory_free_bytes); }},
    {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).",
     [](const GpuSample& s) { return s.temperature_celsius; }},
    {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).",
     [](const GpuSample& s) { return s.power_watts; }},
    {"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).",
     [](const GpuSample& s) { return s.sm_clock_mhz; }},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "Total number of double-bit volatile ECC errors.",
     [](const GpuSample& s) { return asDouble(s.ecc_double_bit_volatile); }},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "Total number of single-bit volatile ECC errors.",
     [](const GpuSample& s) { return asDouble(s.ecc_single_bit_volatile); }},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "Throttling reasons of the clocks (nvml bitmask).",
     [](const GpuSample& s) { return asDouble(s.throttle_reasons); }},
};

}  // namespace

void GaugeSeries::set(const prometheus::Labels& labels, double value) {
  auto [it, inserted] = live_.try_emplace(labels);
  if (inserted) it->second.gauge = &family_->Add(labels);
  it->second.gauge->Set(value);
  it->second.seen = true;
}

void GaugeSeries::sweep() {
  for (auto it = live_.begin(); it != live_.end();) {
    if (it->second.seen) {
      it->second.seen = false;
      ++it;
    } else {
      family_->Remove(it->second.gauge);
      it = live_.erase(it);
    }
  }
}

GpuMetrics::GpuMetrics(prometheus::Registry& registry, std::string hostname)
    : registry_(registry),
      hostname_(std::move(hostname)),
      process_memory_(gaugeFamily(registry, "trainyard_gpu_process_memory_bytes",
                                  "GPU memory held by a compute process (job is empty when the "
                                  "process belongs to no job).")),
      errors_family_(counterFamily(registry, "trainyard_gpu_sample_errors_total",
                                   "NVML reads that failed while sampling the GPUs.")),
      errors_(errors_family_.Add({{"Hostname", hostname_}})) {
  gpu_gauges_.reserve(std::size(kGpuGauges));
  for (const GaugeSpec& spec : kGpuGauges) {
    auto& family = gaugeFamily(registry, spec.name, spec.help);
    gpu_gauges_.push_back(GpuGauge{GaugeSeries(family), spec.value});
  }
}

GpuMetrics::~GpuMetrics() {
  for (GpuGauge& g : gpu_gauges_) registry_.Remove(g.series.family());
  registry_.Remove(process_memory_.family());
  registry_.Remove(errors_family_);
}

void GpuMetrics::update(const NodeSample& sample, const GpuAttribution& attribution) {
  static const GpuHolder kFree;
  for (const GpuSample& gpu : sample.gpus) {
    auto holder_it = attribution.holders.find(gpu.index);
    const GpuHolder& holder = holder_it == attribution.holders.end() ? kFree : holder_it->second;
    std::string index = std::to_string(gpu.index);
    const prometheus::Labels labels = {
        {"gpu", index},
        {"UUID", gpu.uuid},
        {"device", "nvidia" + index},
        {"modelName", gpu.model},
        {"Hostname", hostname_},
        {"job", holder.job},
        {"project", holder.project},
        {"user", holder.user},
    };
    for (GpuGauge& g : gpu_gauges_) {
      if (std::optional<double> v = g.value(gpu)) g.series.set(labels, *v);
    }
    if (!gpu.processes) continue;
    for (const GpuProcessSample& p : *gpu.processes) {
      if (!p.used_memory_bytes) continue;  // NVML could not tell: no value to show
      auto job = attribution.process_jobs.find(p.pid);
      process_memory_.set({{"gpu", index},
                           {"UUID", gpu.uuid},
                           {"Hostname", hostname_},
                           {"pid", std::to_string(p.pid)},
                           {"job", job == attribution.process_jobs.end() ? "" : job->second}},
                          static_cast<double>(*p.used_memory_bytes));
    }
  }
  for (GpuGauge& g : gpu_gauges_) g.series.sweep();
  process_memory_.sweep();
  if (sample.errors > 0) errors_.Increment(sample.errors);
}

std::size_t GpuMetrics::seriesCount() const {
  std::size_t n = process_memory_.size();
  for (const GpuGauge& g : gpu_gauges_) n += g.series.size();
  return n;
}

}  // namespace ty
