// The trainyard policy's model pressure, CPU stranding, and the term the
// pressure switches off.
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

TEST(CpuStranding, RatioIsTotalCpuOverTotalGpu) {
  ReplicaShape half = oneGpu();
  half.gpu_milli = 500;
  half.cpus = Quantity::whole(4);
  ReplicaShape cpu_only;
  cpu_only.gpu_count = 0;
  cpu_only.cpus = Quantity::whole(64);
  // 3 x (1000 GPU, 2000 CPU) + 1 x (500 GPU, 4000 CPU): 10000 / 3500.
  Workload w = {{oneGpu(), 3.0}, {half, 1.0}, {cpu_only, 5.0}};
  EXPECT_DOUBLE_EQ(cpuPerGpuMilli(w), 10000.0 / 3500.0);
  EXPECT_EQ(cpuPerGpuMilli({{cpu_only, 1.0}}), 0.0);
}

TEST(CpuStranding, GpuThatFreeCpuCannotDrive) {
  // 4 CPU per GPU: 8 free GPUs need 32 CPUs; with 8 CPUs 6 GPUs strand.
  EXPECT_DOUBLE_EQ(strandedGpuMilli(8000, 8000, 4.0), 6000.0);
  EXPECT_DOUBLE_EQ(strandedGpuMilli(8000, 32000, 4.0), 0.0);
  EXPECT_DOUBLE_EQ(strandedGpuMilli(8000, 0, 4.0), 8000.0);
  EXPECT_DOUBLE_EQ(strandedGpuMilli(8000, 0, 0.0), 0.0);  // no ratio known
}

// Two 8-GPU nodes that differ in CPU: 4 cores per GPU first, 16 second.
ClusterSnapshot cpuSkewedCluster(const std::string& rich_model) {
  ClusterSnapshot snap;
  snap.nodes.push_back(makeNode("lean", 8, "A100", 32));
  snap.nodes.push_back(makeNode("rich", 8, rich_model, 128));
  return snap;
}

ReplicaShape cpuHeavy() {
  ReplicaShape s = oneGpu();
  s.cpus = Quantity::whole(24);
  return s;
}

TEST(TrainyardPlacement, CpuHeavyReplicaAvoidsStrandingGpus) {
  ClusterSnapshot snap = cpuSkewedCluster("A100");
  ClusterState state(snap);
  // The typical replica asks 2 cores per GPU and fits either node after
  // the placement, so the fragment alone ties (FGD takes the first node);
  // on the lean node 24 cores would leave 7 GPUs with 8 cores.
  auto policy = makePlacementPolicy("trainyard", {{oneGpu(), 1.0}}).value();
  Rng rng(1);
  auto choice = policy->choose(state, cpuHeavy(), rng);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->node, 1u);
  auto fgd = makePlacementPolicy("fgd", {{oneGpu(), 1.0}}).value();
  EXPECT_EQ(fgd->choose(state, cpuHeavy(), rng)->node, 0u);
}

TEST(TrainyardPlacement, StrandingIsOffWhenAModelIsOverPinned) {
  ClusterSnapshot snap = cpuSkewedCluster("T4");
  ClusterState state(snap);
  // T4-only replicas need 1.4 times the T4 capacity: the CPU-rich T4 node
  // is left to them and ties go by index, as in FGD.
  Workload w = {{oneGpu(), 0.3}, {oneGpu({"T4"}), 0.7}};
  auto policy = makePlacementPolicy("trainyard", w).value();
  Rng rng(1);
  auto choice = policy->choose(state, cpuHeavy(), rng);
  ASSERT_TRUE(choice.has_value());
  EXPECT_EQ(choice->node, 0u);
}

}  // namespace
}  // namespace ty
