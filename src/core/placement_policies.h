// Constructors of the placement policies, one file each
// (placement_<name>.cpp). Internal to core: callers go through
// makePlacementPolicy in placement.h.
#pragma once

#include <memory>

#include "core/placement.h"

namespace ty {

std::unique_ptr<PlacementPolicy> makeRandomPlacement();
std::unique_ptr<PlacementPolicy> makeBestFitPlacement();
std::unique_ptr<PlacementPolicy> makePackingPlacement();
std::unique_ptr<PlacementPolicy> makeFgdPlacement(const Workload& workload);
std::unique_ptr<PlacementPolicy> makeTrainyardPlacement(const Workload& workload);

}  // namespace ty
