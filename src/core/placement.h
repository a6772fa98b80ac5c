// Placement policies: which node and which GPUs one replica gets.
// Chosen by name in the config; every policy passes the same contract
// suite (placement_contract_test.cpp). Pure: no clock, thread, file or
// socket; randomness only through the Rng argument.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/rng.h"
#include "common/status.h"
#include "core/cluster.h"

namespace ty {

// The shapes the cluster expects to see and how often (weights sum to 1).
// Fragmentation-aware policies measure free capacity against it.
struct WorkloadShape {
  ReplicaShape shape;
  double weight = 0;
};
using Workload = std::vector<WorkloadShape>;

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // Where the replica should go, or nullopt when no node can hold it now.
  // Does not change `state`; the caller takes the choice.
  virtual std::optional<NodeChoice> choose(const ClusterState& state, const ReplicaShape& shape,
                                           Rng& rng) = 0;
};

// The policy names makePlacementPolicy accepts, the default first.
std::vector<std::string> placementPolicyNames();
Result<std::unique_ptr<PlacementPolicy>> makePlacementPolicy(std::string_view name,
                                                             const Workload& workload);

}  // namespace ty
