// Service levels: a job's priority refined by what it has received or has
// left, so that short work overtakes long work without anyone setting a
// priority by hand.
//
//   kNone               the job's own priority, unchanged.
//   kLeastAttained      two levels per priority, as Tiresias' discretised
//                       LAS (Gu et al., NSDI'19): high while the job's
//                       attained service (GPUs x time run, all runs) is
//                       below `las_threshold`, low after. Needs no
//                       estimate; a job is demoted as it runs.
//   kShortestRemaining  (default) levels by the remaining estimated GPU-time (GPUs x
//                       (max_runtime - time run)), one level per doubling:
//                       shortest remaining first, with preemption across
//                       levels. A running job only climbs as it nears its
//                       end, so it is never demoted below a job it beat;
//                       a newcomer preempts it only when it needs less than
//                       half of what it has left. Jobs without max_runtime
//                       are on the lowest level: writing a limit pays.
//
// The level is folded into PendingJob/RunningJob::priority (priority x
// kServiceLevelsPerPriority + level) before schedule() runs, so the core's
// priority order, in-queue priority preemption and borrow_within_cohort act
// on it unchanged. A user's priority always outranks any level.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/time.h"
#include "core/job.h"
#include "core/schedule.h"

namespace ty {

enum class ServiceLevels { kNone, kLeastAttained, kShortestRemaining };

// "none", "least-attained", "shortest-remaining"; nullopt when unknown.
const char* serviceLevelsName(ServiceLevels s);
std::optional<ServiceLevels> parseServiceLevels(std::string_view name);

// The default is shortest-remaining: on a cluster where no job states
// max_runtime it schedules exactly as kNone, and where jobs do, it gave the
// lowest mean completion time of every policy replayed (docs/simulator.md).
struct ServiceLevelConfig {
  ServiceLevels kind = ServiceLevels::kShortestRemaining;
  // kLeastAttained: GPU-ms of service below which a job is on the high
  // level (Tiresias' threshold; one GPU-hour).
  std::int64_t las_threshold_gpu_ms = 3'600'000;
};

inline constexpr int kServiceLevelsPerPriority = 64;

// The level of one job, 0 (lowest) .. kServiceLevelsPerPriority - 1.
// `attained_gpu_ms`: service received so far; `remaining_gpu_ms`: estimated
// GPU-time left, 0 when unknown.
int serviceLevel(const ServiceLevelConfig& config, std::int64_t attained_gpu_ms,
                 std::int64_t remaining_gpu_ms);

// GPU-ms of service a job of this shape receives in `ms` of run time
// (shares of a GPU count as their fraction).
std::int64_t serviceOver(const Resources& per_replica, int replicas, DurationMs ms);

// Service a job received in its ended attempts (its earlier runs): what
// PendingJob/RunningJob::attained_service carry. Derived from the stored
// attempts, so it survives a restart without a column of its own.
std::int64_t attainedService(const JobSpec& spec, const std::vector<Attempt>& attempts);
std::int64_t attemptService(const JobSpec& spec, const Attempt& attempt);

// Why a job of `priority`/`level` goes before one of `other_priority`/
// `other_level` (folded priorities; level -1: none), in the user's terms:
// "higher priority 10 > 0", or with equal own priorities "higher service
// level 40 > 35" (docs/scheduling.md says what a level means).
std::string precedenceReason(int priority, int level, int other_priority, int other_level);

// Rewrites every pending and running job's priority to include its level
// at `now`. Running jobs count the current run (now - started_at) on top of
// attained_service. No-op for kNone.
void applyServiceLevels(QueueSnapshot& queues, const ServiceLevelConfig& config, Timestamp now);

}  // namespace ty
