// Gang placement: every replica of a job on the cluster in one step, or none.
//
// One replica: the placement policy chooses. Several replicas: first the
// policy is asked for one node holding the whole gang (the replicas' shape
// times their number, whole GPUs only), so a gang that fits one node stays
// on one node. Otherwise the gang spans nodes and takes the fewest of them:
// nodes that hold the most replicas first, and for the last replicas the
// tightest node that still holds them (best fit, so big blocks stay whole).
// With same_label set ("rack"), only nodes that share one value of that label
// are used together, and the group needing the fewest nodes wins. This
// follows Volcano's gang plugin (all-or-nothing) and Slurm's topology-aware
// selection (fewest switches) in spirit, on a flat node list.
//
// Pure: changes only the ClusterState it is given.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/rng.h"
#include "core/cluster.h"
#include "core/placement.h"

namespace ty {

struct GangRequest {
  ReplicaShape shape;
  int replicas = 1;
  std::string same_label;  // empty: any nodes
};

// Places every replica or none. On success the replicas are taken from
// `state` and returned in replica order; on failure `state` is unchanged.
std::optional<std::vector<NodeChoice>> placeGang(ClusterState& state, PlacementPolicy& policy,
                                                 const GangRequest& gang, Rng& rng);

// How many replicas of `shape` the node can hold now.
int replicaCapacity(const ClusterState& state, std::size_t node, const ReplicaShape& shape);
int replicaCapacity(const ClusterState& state, std::size_t node, const ReplicaShape& shape,
                    const ModelMask& mask);

void takeAll(ClusterState& state, const std::vector<NodeChoice>& choices,
             const ReplicaShape& shape);
void giveAll(ClusterState& state, const std::vector<NodeChoice>& choices,
             const ReplicaShape& shape);

}  // namespace ty
