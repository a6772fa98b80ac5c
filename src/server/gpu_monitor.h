// GpuMonitor: the server's eyes on its own GPUs. Every sample_interval it
//   1. samples the GPUs (GpuSampler over NVML, the --fake-gpus reader, or a
//      scripted reader in tests),
//   2. learns who holds each GPU from the control plane's node view and
//      which pid belongs to which job from a /proc scan (exec/local/
//      proc_jobs.h), with each job's CPU use since the last round,
//   3. updates the DCGM series with job, project and user labels
//      (metrics/gpu_metrics.h) and the diagnosis series
//      (trainyard_job_gpu_idle_seconds, trainyard_ghost_gpu_processes;
//      trainyard_gpu_unhealthy comes from the control plane's metrics, fed
//      by set_gpu_health),
//   4. runs the diagnosis (core/gpu_diagnosis.h) and acts on it through the
//      callbacks it was given: events for the jobs' timelines, GPU health
//      for the scheduler, jobs to stop, leftover processes to kill.
//
// It never writes the store or calls the scheduler itself: the callbacks
// are how the server wires it (makeGpuMonitor below), and how tests watch it.
//
// Ownership: owns its reader, its registry and its thread; borrows the
// clock, which must outlive it, as must what the functions it is given use. Thread-safety:
// round() is called by the monitor's thread (after start()) or by a test,
// one at a time; exposition() may be called from any thread.
#pragma once

#include <prometheus/registry.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api/control_plane.h"
#include "common/clock.h"
#include "core/gpu_diagnosis.h"
#include "core/job.h"
#include "core/node.h"
#include "exec/local/proc_jobs.h"
#include "gpu/gpu_sampler.h"
#include "gpu/sampling_loop.h"
#include "metrics/gpu_metrics.h"

namespace ty {

class JobService;
class Store;
struct ServerConfig;

struct GpuMonitorOptions {
  std::string node;  // this node's name in the control plane's view; the Hostname label
  DurationMs interval = 5'000;
  DiagnosisConfig diagnosis;
  // CPUs a job without a CPU limit may use, for its CPU fraction: the node's.
  double node_cpus = 1;
};

// How the monitor acts. Each may be empty (nothing is done). They are called
// from round(), without the monitor's lock held.
struct GpuMonitorActions {
  std::function<void(std::vector<Event>)> record_events;
  std::function<void(const std::string& node, int gpu, bool healthy, const std::string& reason)>
      set_gpu_health;
  // Called after record_events has carried the event that says why.
  std::function<void(JobId job, const std::string& why)> stop_job;
  // Only leftovers of our own ended jobs are passed (gpu_monitor.kill_ghosts).
  std::function<void(std::int64_t pid, JobId job)> kill_process;
};

class GpuMonitor {
 public:
  // The job's record, or nullopt when the store does not have it.
  using JobLookup = std::function<std::optional<Job>(JobId)>;
  using ProcScanner = std::function<ProcJobs()>;
  // The control plane's nodes (ControlPlane::nodes): who holds each GPU.
  using NodesView = std::function<std::vector<NodeView>()>;

  GpuMonitor(std::unique_ptr<GpuReader> reader, NodesView nodes, JobLookup lookup, ProcScanner scan,
             const Clock& clock, GpuMonitorOptions options, GpuMonitorActions actions);
  ~GpuMonitor();
  GpuMonitor(const GpuMonitor&) = delete;
  GpuMonitor& operator=(const GpuMonitor&) = delete;

  // One round: sample, attribute, update the series, diagnose, act.
  void round();
  // Calls round() every options.interval on a thread of its own until
  // stop(); the first round is the caller's.
  void start();
  void stop();

  // The monitor's series in the Prometheus text format, a whole round at a
  // time.
  std::string exposition() const;
  // This node's GPUs as the latest round saw them, keyed by (node, index),
  // for GET /api/v1/nodes: the latest utilisation and memory reading, the
  // last kGpuHistorySamples utilisation readings, and the idle and ghost
  // diagnoses. Empty before the first round. A whole round at a time.
  GpuLiveState liveState() const;

 private:
  struct CpuMark {
    Timestamp time = 0;
    double cpu_seconds = 0;
  };

  void updateDiagnosisSeries(const NodeSample& sample, const DiagnosisOutput& out);
  // Called with mu_ held. `idle_since`: by GPU index, the start of the
  // idle spell of the jobs holding it.
  void updateLive(Timestamp now, const NodeSample& sample, const DiagnosisOutput& out,
                  const std::map<int, Timestamp>& idle_since);

  GpuSampler sampler_;
  NodesView nodes_;
  JobLookup lookup_;
  ProcScanner scan_;
  const Clock& clock_;
  GpuMonitorOptions options_;
  GpuMonitorActions actions_;

  // Round state: round() only.
  DiagnosisState diagnosis_;
  std::map<JobId, CpuMark> cpu_marks_;
  std::vector<std::string> last_problems_;

  mutable std::mutex mu_;  // a scrape sees whole rounds
  prometheus::Registry registry_;
  GpuMetrics metrics_;
  GaugeSeries idle_seconds_;
  GaugeSeries ghost_processes_;
  // By GPU index: the live view, its history kept as a ring (oldest
  // first, at most kGpuHistorySamples).
  struct LiveGpu {
    GpuLiveView view;
    std::deque<std::pair<Timestamp, double>> ring;
  };
  std::map<int, LiveGpu> live_;

  std::unique_ptr<SamplingLoop> loop_;
};

// gpu_monitor.kill_ghosts: SIGKILLs `pid` if /proc still says it belongs to
// `job` (the pid may have been reused since the sample). False when it did
// not kill.
bool killLeftoverProcess(std::int64_t pid, JobId job, const std::string& proc_root = "/proc");

// The GPU monitor of `node` as the server runs it: reads from NVML
// (config.nvml_library) or the --fake-gpus reader, options from
// config.gpu_monitor, and acts through `service` (events, GPU health, job
// cancels) and kill_ghosts. nullptr when the monitor is turned off, the node
// has no GPUs, or NVML cannot be opened (logged). Not started: the caller
// calls start(). `service`, `store` and `clock` must outlive the monitor.
std::unique_ptr<GpuMonitor> makeGpuMonitor(const ServerConfig& config, const NodeInfo& node,
                                           JobService& service, Store& store, const Clock& clock);

}  // namespace ty
