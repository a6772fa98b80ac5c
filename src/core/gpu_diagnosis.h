// GPU diagnosis: what the samples of one node's GPUs say about the jobs on
// them, in words. One call per sampling round:
//
//   DiagnosisOutput out = diagnoseGpus(input, config, state);
//
// The input is one round's facts (GPU utilisation, double-bit ECC counts,
// XID errors, the compute processes, which job holds which GPU, each job's
// CPU use, which pid belongs to which job); `state` carries what earlier
// rounds saw (since when a job is idle, its recent utilisation, the last
// ECC counts, what was already reported) and is updated in place. The
// output is events for the jobs' timelines, GPU health changes, jobs to
// stop and processes to kill, and the values of the diagnosis series.
//
// Four findings:
//   - idle allocation: every GPU of a job stayed under idle_util_percent for
//     idle_after; one Warning event per idle spell, and the job is stopped
//     idle_stop_after later when that policy is on.
//   - input-bound: the job's GPUs averaged under input_bound_util_percent
//     over input_bound_window while its CPUs were saturated; one event per
//     episode.
//   - ghost process: a process on a GPU whose pid belongs to no running job,
//     seen in two rounds in a row (a process of a job that just ended may
//     need one interval to exit); its GPU is kept out of scheduling until it
//     is gone, and a leftover of one of our ended jobs is killed when
//     kill_ghosts is on (a foreign process never is).
//   - unhealthy GPU: the volatile double-bit ECC count rose, or an XID error
//     arrived; the GPU is kept out of scheduling.
//
// Pure: no clock, no I/O; time comes in as input.now. Same input and state,
// same output. Not thread-safe per state object.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/ids.h"
#include "common/status.h"
#include "common/time.h"
#include "core/job.h"

namespace ty {

// Thresholds and policies (the `gpu_monitor:` section of the server config).
struct DiagnosisConfig {
  double idle_util_percent = 5;  // a GPU under this is idle
  DurationMs idle_after = 30LL * 60 * 1000;
  DurationMs idle_stop_after = 0;  // after the idle event; 0: never stop
  double input_bound_util_percent = 40;
  DurationMs input_bound_window = 5LL * 60 * 1000;
  double cpu_saturated_fraction = 0.9;  // of the job's CPUs
  bool kill_ghosts = false;
};

// InvalidArgument naming the field (as the config file spells it) when a
// value is out of range.
Status validateDiagnosisConfig(const DiagnosisConfig& config);

struct GpuProcessObservation {
  std::int64_t pid = 0;
  std::optional<std::int64_t> used_memory_bytes;
};

// One GPU in one round. Unset readings are unknown, never taken as zero.
struct GpuObservation {
  int index = 0;
  std::string uuid;
  std::optional<double> util_percent;
  std::optional<std::uint64_t> ecc_double_bit;                  // volatile: since the driver loaded
  std::vector<std::uint64_t> xids;                              // XID errors since the last round
  std::optional<std::vector<GpuProcessObservation>> processes;  // unset: unreadable
};

// A running job that holds GPUs of this node.
struct JobObservation {
  JobId job;
  std::string project;
  std::string user;
  std::vector<int> gpus;  // indices on this node
  // Its processes' CPU time over the last interval as a fraction of the
  // CPUs it may use (its CPU limit, else the node's cores), 0..1; unset when
  // unknown (first round, no processes found).
  std::optional<double> cpu_fraction;
};

// Whose a pid is, from its environment (TRAINYARD_JOB_ID).
struct PidOwner {
  JobId job;
  bool running = false;  // false: the job has ended (or holds no GPU here)
};

struct DiagnosisInput {
  Timestamp now = 0;
  std::vector<GpuObservation> gpus;
  std::vector<JobObservation> jobs;
  std::map<std::int64_t, PidOwner> pid_owners;  // pids of our jobs only
};

// What earlier rounds saw. Start with a default-constructed one.
struct DiagnosisState {
  struct Sample {
    Timestamp time = 0;
    double util = 0;
    double cpu = 0;
  };
  struct JobState {
    Timestamp idle_since = 0;  // 0: not idle
    double idle_util_sum = 0;  // over the rounds of the idle spell
    int idle_rounds = 0;
    Timestamp idle_event_at = 0;  // 0: not reported in this spell
    bool stop_requested = false;
    std::vector<Sample> recent;  // within input_bound_window, oldest first
    bool input_bound_reported = false;
  };
  struct GpuState {
    std::uint64_t ecc_double_bit = 0;  // the count the GPU was last judged by
    std::string fault;                 // ECC or XID; "" when none
    std::string ghost;                 // "ghost process ..."; "" when none
    bool unhealthy = false;            // as last reported
    std::string reported_reason;
  };
  std::map<JobId, JobState> jobs;
  std::map<int, GpuState> gpus;
  std::set<std::int64_t> ghost_candidates;  // pids seen last round with no running job
  std::set<std::int64_t> ghosts_reported;
  std::set<std::int64_t> ghosts_killed;
};

struct GpuHealthChange {
  int gpu = 0;
  bool healthy = true;
  std::string reason;  // why it is unhealthy; "" when healthy
  bool operator==(const GpuHealthChange&) const = default;
};

struct JobStop {
  JobId job;
  std::string why;
  bool operator==(const JobStop&) const = default;
};

struct ProcessKill {
  std::int64_t pid = 0;
  JobId job;  // the ended job it was left behind by
  bool operator==(const ProcessKill&) const = default;
};

struct JobIdleValue {
  JobId job;
  std::string project;
  std::string user;
  double seconds = 0;
  bool operator==(const JobIdleValue&) const = default;
};

struct DiagnosisOutput {
  // New events, Warning level, with job, time, reason and message set (seq
  // is the store's to assign).
  std::vector<Event> events;
  std::vector<GpuHealthChange> health;  // transitions only
  std::vector<JobStop> stops;           // apply after `events`, which say why
  std::vector<ProcessKill> kills;
  // Series values of this round: one idle value per observed job (0 when
  // busy), ghost counts per observed GPU, and the reason of each unhealthy
  // GPU.
  std::vector<JobIdleValue> idle_seconds;
  std::map<int, int> ghost_processes;
  // The pids behind ghost_processes, in the GPU's process-list order, for
  // each GPU whose process list was read this round (an unread list has no
  // entry: its ghosts are not known).
  std::map<int, std::vector<std::int64_t>> ghost_pids;
  std::map<int, std::string> unhealthy;
};

DiagnosisOutput diagnoseGpus(const DiagnosisInput& input, const DiagnosisConfig& config,
                             DiagnosisState& state);

// Event reasons, for callers and tests.
inline constexpr char kEventGpuIdle[] = "GpuIdle";
inline constexpr char kEventIdleStop[] = "GpuIdleStop";
inline constexpr char kEventInputBound[] = "InputBound";
inline constexpr char kEventGhostProcess[] = "GhostProcess";
inline constexpr char kEventGpuUnhealthy[] = "GpuUnhealthy";

// "XID 79: GPU has fallen off the bus"; a generic text for XIDs it does not
// know.
std::string describeXid(std::uint64_t xid);

}  // namespace ty
