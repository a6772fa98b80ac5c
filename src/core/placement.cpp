#include "core/placement.h"

#include "core/placement_policies.h"

namespace ty {

std::vector<std::string> placementPolicyNames() {
  return {"trainyard", "fgd", "best-fit", "packing", "random"};
}

Result<std::unique_ptr<PlacementPolicy>> makePlacementPolicy(std::string_view name,
                                                             const Workload& workload) {
  if (name == "trainyard") return makeTrainyardPlacement(workload);
  if (name == "fgd") return makeFgdPlacement(workload);
  if (name == "best-fit") return makeBestFitPlacement();
  if (name == "packing") return makePackingPlacement();
  if (name == "random") return makeRandomPlacement();
  std::string names;
  for (const auto& n : placementPolicyNames()) names += (names.empty() ? "" : ", ") + n;
  return Status::invalidArgument(
      "unknown placement policy \"" + std::string(name) + "\"; choose one of: " + names,
      "placement");
}

}  // namespace ty
