// Model pressure used by the trainyard placement policy
// (placement_trainyard.cpp). Internal to core; declared here so that it
// can be tested on values.
#pragma once

#include "core/cluster.h"
#include "core/placement.h"

namespace ty {

// The largest expected share of one GPU model's capacity that the
// workload's model-constrained shapes (non-empty gpu_types) need, with
// demand spread over accepted models in proportion to their capacity and
// scaled so that the whole workload fills the cluster once. 0 when no
// shape is constrained; above 1 when a model cannot hold its pinned demand.
double pinnedModelShare(const Workload& workload, const ClusterState& state);

}  // namespace ty
