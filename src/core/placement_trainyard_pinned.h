// Helpers of the trainyard placement policy (placement_trainyard.cpp):
// model pressure and CPU stranding. Internal to core; declared here so
// that they can be tested on values.
#pragma once

#include <cstdint>

#include "core/cluster.h"
#include "core/placement.h"

namespace ty {

// The largest expected share of one GPU model's capacity that the
// workload's model-constrained shapes (non-empty gpu_types) need, with
// demand spread over accepted models in proportion to their capacity and
// scaled so that the whole workload fills the cluster once. 0 when no
// shape is constrained; above 1 when a model cannot hold its pinned demand.
double pinnedModelShare(const Workload& workload, const ClusterState& state);

// CPU milli per GPU milli the workload's GPU shapes ask for, weighted by
// frequency (total CPU over total GPU). 0 without GPU shapes.
double cpuPerGpuMilli(const Workload& workload);

// Free GPU milli that `free_cpu_milli` cannot drive when every GPU milli
// needs `cpu_per_gpu_milli` CPU milli: GPU left idle for want of CPU. 0
// when the ratio is 0.
double strandedGpuMilli(std::int64_t free_gpu_milli, std::int64_t free_cpu_milli,
                        double cpu_per_gpu_milli);

}  // namespace ty
