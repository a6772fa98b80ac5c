// GpuMetrics: the GPU series of /metrics, named and labelled as NVIDIA's DCGM
// exporter names them (DCGM_FI_DEV_GPU_UTIL{gpu,UUID,device,modelName,
// Hostname}), so that existing dashboards work, plus who holds each GPU
// (job, project, user) and Trainyard's own per-process and error series.
// The names are fixed by docs/observability.md.
//
// It reads values only (NodeSample from gpu/gpu_sampler.h and a
// GpuAttribution) and never calls NVML or the scheduler.
//
// Series follow the samples: a field that is unset in the latest sample has
// no series, and the series of a GPU that changed holder, a process that
// exited or a GPU that vanished are removed, so that the label sets do not
// pile up across jobs.
//
// Ownership: the families live in the prometheus::Registry given at
// construction, which must outlive the GpuMetrics; the destructor removes
// them. Thread-safety: call update() from one thread at a time. The
// registry may be collected from other threads meanwhile (prometheus-cpp
// locks each family); such a scrape may see an update half applied, so a
// caller that wants whole updates serialises update() and collection.
#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/registry.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gpu/gpu_sampler.h"

namespace ty {

// Who holds a GPU; all empty for a free GPU.
struct GpuHolder {
  std::string job;  // the job id, as the API prints it
  std::string project;
  std::string user;

  bool operator==(const GpuHolder&) const = default;
};

// What the scheduler knows about the sampled GPUs.
struct GpuAttribution {
  std::map<int, GpuHolder> holders;                  // by GPU index; absent: free
  std::map<std::int64_t, std::string> process_jobs;  // pid -> job id; absent: no job
};

// The live series of one gauge family: set() those the current update has,
// then sweep() to remove the rest.
class GaugeSeries {
 public:
  explicit GaugeSeries(prometheus::Family<prometheus::Gauge>& family) : family_(&family) {}
  void set(const prometheus::Labels& labels, double value);
  void sweep();
  std::size_t size() const { return live_.size(); }
  prometheus::Family<prometheus::Gauge>& family() const { return *family_; }

 private:
  struct Live {
    prometheus::Gauge* gauge = nullptr;  // owned by the family
    bool seen = false;
  };
  prometheus::Family<prometheus::Gauge>* family_;
  std::map<prometheus::Labels, Live> live_;
};

class GpuMetrics {
 public:
  // Registers the families in `registry`; `hostname` is the Hostname label.
  GpuMetrics(prometheus::Registry& registry, std::string hostname);
  ~GpuMetrics();
  GpuMetrics(const GpuMetrics&) = delete;
  GpuMetrics& operator=(const GpuMetrics&) = delete;

  // Sets every series from `sample` and removes those it no longer has;
  // adds sample.errors to trainyard_gpu_sample_errors_total.
  void update(const NodeSample& sample, const GpuAttribution& attribution);

  // How many series the GPU gauges hold now (all families together).
  std::size_t seriesCount() const;

 private:
  struct GpuGauge {
    GaugeSeries series;
    std::optional<double> (*value)(const GpuSample&);
  };

  prometheus::Registry& registry_;
  std::string hostname_;
  std::vector<GpuGauge> gpu_gauges_;
  GaugeSeries process_memory_;
  prometheus::Family<prometheus::Counter>& errors_family_;
  prometheus::Counter& errors_;
};

}  // namespace ty
