#include "sim/job_policies.h"

namespace ty {

std::vector<std::string> replayPolicyNames() {
  std::vector<std::string> names = {"fifo", "sjf", "tiresias"};
  for (const TrainyardVariant& v : trainyardVariants()) names.push_back(v.name);
  return names;
}

Result<std::unique_ptr<ReplayPolicy>> makeReplayPolicy(std::string_view name,
                                                       const PolicyOptions& options) {
  if (name == "fifo") return makeFifoPolicy();
  if (name == "sjf") return makeSjfPolicy();
  if (name == "tiresias") return makeTiresiasPolicy(options);
  for (const TrainyardVariant& v : trainyardVariants()) {
    if (name == v.name) return makeTrainyardPolicy(options, v);
  }
  std::string known;
  for (const auto& n : replayPolicyNames()) known += (known.empty() ? "" : ", ") + n;
  return Status::invalidArgument(
      "unknown policy \"" + std::string(name) + "\" (known: " + known + ")", "policies");
}

}  // namespace ty
