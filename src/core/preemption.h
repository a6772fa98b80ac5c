// Preemption: which running jobs stop so that a waiting job can run.
//
// Two claims justify it, both strictly better than the victim's:
//   priority  a waiting job may stop running jobs of its own queue with a
//             strictly lower priority;
//   reclaim   a queue that stays within its nominal quota with the waiting
//             job may stop jobs of cohort queues that hold more than their
//             nominal (Kueue's reclaimWithinCohort), only while they do.
// Fair share orders waiting jobs but never preempts, and a job younger than
// its min_runtime is never a victim: together they keep two queues at
// contention from swapping jobs every pass.
//
// Victims are whole jobs, chosen to lose the least work: lowest priority,
// then least run time since the last checkpoint, then the newest. The
// shortest prefix of that order with which the preemptor fits (quota and
// placement) is taken, then any victim the preemptor can do without is
// dropped again, most valuable first (as Kueue does).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <vector>

#include "common/ids.h"
#include "common/time.h"

namespace ty {

// What victim ordering needs to know about a running job.
struct VictimInfo {
  JobId id;
  int priority = 0;
  Timestamp started_at = 0;
  Timestamp last_checkpoint_at = 0;  // 0: never checkpointed
  DurationMs min_runtime = 0;
};

// Run time that a stop now would lose.
DurationMs workAtRisk(const VictimInfo& v, Timestamp now);
// Whether min_runtime still protects the job.
bool protectedByMinRuntime(const VictimInfo& v, Timestamp now);
// True when `a` should be stopped before `b`.
bool stopsBefore(const VictimInfo& a, const VictimInfo& b, Timestamp now);

// How chooseVictims tries victim sets: it releases and restores candidates
// (by index in stop order) and asks whether the preemptor fits with what is
// released. Everything released is restored before it returns.
struct VictimSearch {
  std::function<void(std::size_t)> release;
  std::function<void(std::size_t)> restore;
  std::function<bool()> fits;
};

// Fewest victims among `candidates` (already in stop order) with which the
// preemptor fits, as indices; nullopt when even all of them are not enough.
std::optional<std::vector<std::size_t>> chooseVictims(std::size_t candidates,
                                                      const VictimSearch& search);

}  // namespace ty
