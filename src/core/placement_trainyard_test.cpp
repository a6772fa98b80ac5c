// The trainyard policy's model pressure and the tie-break it switches.
#include <gtest/gtest.h>

#include "common/rng.h"
#include "core/placement.h"
#include "core/placement_trainyard_pinned.h"

namespace ty {
namespace {

NodeState makeNode(const std::string& name, int gpus, const std::string& model, int cpus) {
  NodeState n;
  n.info.name = name;
  n.info.cpus = Quantity::whole(cpus);
  n.info.memory_bytes = std::int64_t{64} << 30;
  for (int g = 0; g < gpus; ++g) n.info.gpus.push_back({g, "uuid", model, 0, true});
  return n;
}

ReplicaShape oneGpu(std::vector<std::string> types = {}) {
  ReplicaShape s;
  s.gpu_count = 1;
  s.gpu_milli = 1000;
  s.cpus = Quantity::whole(2);
  s.gpu_types = std::move(types);
  return s;
}

// 8 T4 GPUs on two 4-GPU nodes (listed second) and one 8-GPU A100 node.
ClusterSnapshot mixedCluster() {
  ClusterSnapshot snap;
  snap.nodes.push_back(makeNode("big", 8, "A100", 64));
  snap.nodes.push_back(makeNode("t4-a", 4, "T4", 32));
  snap.nodes.push_back(makeNode("t4-b", 4, "T4", 32));
  return snap;
}

TEST(PinnedModelShare, ZeroWithoutConstrainedShapes) {
  ClusterSnapshot snap = mixedCluster();
  ClusterState state(snap);
  EXPECT_EQ(pinnedModelShare({{oneGpu(), 1.0}}, state), 0.0);
}

TEST(PinnedModelShare, ScalesConstrainedDemandToTheModelsCapacity) {
  ClusterSnapshot snap = mixedCluster();
  ClusterState state(snap);
  // A quarter of the demand needs T4: 4 of the 16 GPUs, half of the 8 T4s.
  Workload w = {{oneGpu(), 0.75}, {oneGpu({"T4"}), 0.25}};
  EXPECT_DOUBLE_EQ(pinnedModelShare(w, state), 0.5);
  // Accepting either model spreads it by capacity: 4 of 16 on each.
  Workload either = {{oneGpu(), 0.75}, {oneGpu({"T4", "A100"}), 0.25}};
  EXPECT_DOUBLE_EQ(pinnedModelShare(either, state), 0.25);
}

TEST(TrainyardPlacement, TiesGoToSmallNodesWhenNothingIsPinned) {
  ClusterSnapshot snap = mixedCluster();
  ClusterState state(snap);
  auto policy = makePlacementPolicy("trainyard", {{oneGpu(), 1.0}}).value();
  Rng rng(1);
  auto choice = policy->choose(state, oneGpu(), rng);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->node, 1u);  // a 4-GPU node, the 8-GPU one stays whole
}

TEST(TrainyardPlacement, TiesGoByIndexWhenAModelIsPinned) {
  ClusterSnapshot snap = mixedCluster();
  ClusterState state(snap);
  Workload w = {{oneGpu(), 0.5}, {oneGpu({"T4"}), 0.5}};
  auto policy = makePlacementPolicy("trainyard", w).value();
  Rng rng(1);
  auto choice = policy->choose(state, oneGpu(), rng);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->node, 0u);  // the T4 nodes are left to the T4 replicas
}

}  // namespace
}  // namespace ty
