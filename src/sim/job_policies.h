// Scheduling policies for `trainyard simulate jobs`, chosen by name.
//
//   fifo       strict first-come first-served; the head job blocks the rest
//              (no skipping, no preemption).
//   sjf        shortest estimated run time first (the user's max_runtime, the
//              same estimate the core sees); jobs that fit start, no
//              preemption. Without estimates it is submission order.
//   tiresias   discretised two-dimensional least-attained-service (Gu et
//              al., NSDI'19): two queues split by attained GPU-service,
//              FIFO within a queue, preemptive across queues.
//   trainyard  the server's scheduler with its defaults: every decision
//              comes from the pure core schedule() on a snapshot of the
//              simulated cluster, with shortest-remaining service levels
//              (core/service_levels.h) and fair share within a level.
//   trainyard-las  least-attained service levels (high below the
//              threshold), least served first within a level.
//   trainyard-fair-share  no levels: priority, fair share, age.
//
// Each policy is a small object behind ReplayPolicy (job_replay.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/time.h"
#include "core/schedule.h"
#include "core/service_levels.h"
#include "sim/job_replay.h"

namespace ty {

struct PolicyOptions {
  // Tiresias: attained GPU-service (GPU-ms) at which a job moves from the
  // high queue to the low one. Default one GPU-hour.
  std::int64_t las_threshold_gpu_ms = 3'600'000;
  // Tiresias starvation promotion: a low-queue job that has waited at least
  // this many times its run so far goes back to the high queue; 0 turns it
  // off (the default).
  double starvation_factor = 0;
  // Trainyard through schedule(): what PolicyConfig turns on, and the
  // min_runtime every job gets (not preempted before it ran this long).
  bool queues = true;  // one queue per VC with quotas; false: no queue config
  bool backfill = true;
  bool preemption = true;
  // Default 0, as a JobSpec without min_runtime: the core hands quota freed
  // by a reclaim to the preemptor, so reclaim converges without it.
  DurationMs min_runtime = 0;
  // How long a preempted job takes to stop (SIGTERM to exit); it keeps its
  // GPUs meanwhile. The JobSpec default grace period.
  DurationMs stop_grace = 30'000;
  // Half-life of the queues' decayed usage in the fair-share order; 0: the
  // core's default (7 days, Slurm's).
  DurationMs fair_share_half_life = 0;
};

std::vector<std::string> replayPolicyNames();
// InvalidArgument naming the accepted names when `name` is unknown.
Result<std::unique_ptr<ReplayPolicy>> makeReplayPolicy(std::string_view name,
                                                       const PolicyOptions& options);

// The implementations, one file each.
std::unique_ptr<ReplayPolicy> makeFifoPolicy();
std::unique_ptr<ReplayPolicy> makeSjfPolicy();
std::unique_ptr<ReplayPolicy> makeTiresiasPolicy(const PolicyOptions& options);
// The core's schedule() under one configuration.
struct TrainyardVariant {
  std::string name;
  ServiceLevels levels;
  JobOrder order;
};
const std::vector<TrainyardVariant>& trainyardVariants();
std::unique_ptr<ReplayPolicy> makeTrainyardPolicy(const PolicyOptions& options,
                                                  const TrainyardVariant& variant);

}  // namespace ty
