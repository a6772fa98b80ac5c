#include "sim/job_policies.h"

namespace ty {

std::vector<std::string> replayPolicyNames() {
  return {"fifo", "sjf", "tiresias", "trainyard", "trainyard-las"};
}

Result<std::unique_ptr<ReplayPolicy>> makeReplayPolicy(std::string_view name,
                                                       const PolicyOptions& options) {
  if (name == "fifo") return makeFifoPolicy();
  if (name == "sjf") return makeSjfPolicy();
  if (name == "tiresias") return makeTiresiasPolicy(options);
  if (name == "trainyard") return makeTrainyardPolicy(options, /*las_priority=*/false);
  if (name == "trainyard-las") return makeTrainyardPolicy(options, /*las_priority=*/true);
  std::string known;
  for (const auto& n : replayPolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::invalidArgument(
      "unknown policy \"" + std::string(name) + "\" (known: " + known + ")", "policies");
}

}  // namespace ty
