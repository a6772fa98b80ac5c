// The openb placement replay, following the FGD artifact's protocol
// (hkust-adsl/kubernetes-scheduler-simulator; Weng et al., ATC'23):
//   pods sorted by name, inflated by resampling with replacement until the
//   total GPU request reaches `tune` x cluster GPU capacity, shuffled with
//   the seed, then placed one by one through a PlacementPolicy; no
//   departures, a pod that does not fit is dropped. After every pod the
//   allocated GPU milli, the arrived GPU milli (dropped pods included) and
//   the cluster fragment (core/fragmentation.h) are sampled.
// Pure computation over values: reading the CSVs and printing live in
// openb_command.cpp / trace_csv.cpp / report_*.cpp. Thread-compatible.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cluster.h"
#include "core/placement.h"
#include "sim/trace_csv.h"

namespace ty {

// The cluster of an openb node list (labels none; GPUs numbered 0..n-1).
ClusterSnapshot openbSnapshot(const std::vector<OpenbNode>& nodes);
// What one pod asks of a node.
ReplicaShape openbShape(const OpenbPod& pod);
// The shapes of a pod list weighted by frequency: all of them
// (coverage 1), which is what the policies get, or the artifact's typical
// pods (0.95), which the reported fragmentation is measured against.
Workload openbWorkload(const std::vector<OpenbPod>& pods, double coverage);

// Arrived GPU request as a whole percent of capacity: the curve's x axis.
inline constexpr int kOpenbMaxArrivedPct = 130;

struct OpenbRunResult {
  // Index k = arrived k% of capacity (0..kOpenbMaxArrivedPct); NaN where
  // the run had no sample at k or k±1. Both in percent of GPU capacity.
  std::vector<double> alloc_pct;
  std::vector<double> frag_pct;
  std::size_t pods = 0;    // after inflation
  std::size_t placed = 0;  // the rest were dropped
  std::int64_t capacity_milli = 0;
  // Sum of GPU milli handed out, checked against the final free capacity:
  // false would mean a policy over-committed a GPU, CPU or memory.
  bool consistent = true;
};

// One replay. `workload` is what the reported fragment is measured
// against (the artifact's typical pods).
OpenbRunResult replayOpenb(const ClusterSnapshot& cluster, const std::vector<OpenbPod>& pods,
                           const Workload& workload, PlacementPolicy& policy, double tune,
                           std::uint64_t seed);

}  // namespace ty
