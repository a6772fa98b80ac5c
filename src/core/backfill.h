// EASY backfill (Lifka, "The ANL/IBM SP scheduling system", 1995; Slurm's
// sched/backfill and Fluxion's easy queue policy follow it).
//
// The first job in order that cannot start gets a reservation: the earliest
// time at which running jobs, ending at started_at + max_runtime, will have
// released enough for it (the shadow time), and the nodes and GPUs it would
// take then. Jobs later in the order may start now only when they cannot
// delay it: they end by the shadow time (their own max_runtime), or they use
// none of the reserved resources. A running job without max_runtime never
// ends as far as the estimate knows; when the reservation needs it to end,
// the start is unknown (0) and the reserved resources are held for the job
// as they become free, so a stream of small jobs cannot starve it.
//
// Pure: works on copies of ClusterState handed in.
#pragma once

#include <optional>
#include <vector>

#include "common/rng.h"
#include "common/time.h"
#include "core/cluster.h"
#include "core/gang.h"
#include "core/placement.h"

namespace ty {

// What one running (or just placed) job frees, and when. at == 0: never
// known to end.
struct Release {
  Timestamp at = 0;
  ReplicaShape shape;
  std::vector<NodeChoice> choices;
};

struct Reservation {
  Timestamp start = 0;              // shadow time; 0 when it cannot be estimated
  std::vector<NodeChoice> choices;  // where the job would run then
};

// Sorts releases by end time, those that never end last.
void sortReleases(std::vector<Release>& releases);

// The earliest moment the gang fits on `future` as the sorted `releases`
// are given back to it, and where. nullopt when it does not fit even after
// every release (it needs capacity that is not there: an unhealthy GPU).
// `future` is left as it was.
// A gang that fits before any release starts at `now`.
std::optional<Reservation> reserve(ClusterState& future, const std::vector<Release>& releases,
                                   const GangRequest& gang, PlacementPolicy& policy, Rng& rng,
                                   Timestamp now);

// Whether a job of this max_runtime started now is over by the shadow
// time, so it cannot delay the reservation.
bool endsBefore(Timestamp now, DurationMs max_runtime, Timestamp shadow);

}  // namespace ty
