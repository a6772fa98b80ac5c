#include "core/fragmentation.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

ReplicaShape shape(int gpus, int milli, std::int64_t cpu_milli) {
  ReplicaShape s;
  s.gpu_count = gpus;
  s.gpu_milli = milli;
  s.cpus = Quantity::fromMilli(cpu_milli);
  return s;
}

ClusterSnapshot oneNode(int gpus, std::int64_t cpu_milli, const std::string& model = "G2") {
  ClusterSnapshot snap;
  NodeState n;
  n.info.name = "n";
  n.info.cpus = Quantity::fromMilli(cpu_milli);
  n.info.memory_bytes = 1 << 30;
  for (int g = 0; g < gpus; ++g) n.info.gpus.push_back({g, "", model, 0, true});
  snap.nodes.push_back(n);
  return snap;
}

TEST(Fragmentation, HandComputedNode) {
  // GPUs free: 1000, 300, 0, 600; 8 CPUs free.
  ClusterSnapshot snap = oneNode(4, 8000);
  snap.nodes[0].gpu_used_milli = {{1, 700}, {2, 1000}, {3, 400}};
  ClusterState state(snap);
  Workload w = {{shape(1, 500, 1000), 0.5},     // fits: GPU with 300 free is fragment
                {shape(2, 1000, 1000), 0.25},   // one whole GPU only: all 1900 idle
                {shape(0, 1000, 1000), 0.25}};  // CPU-only: all 1900 idle
  FragmentationMeasure m(w, state);
  EXPECT_DOUBLE_EQ(m.nodeFragMilli(state.nodes()[0]), 0.5 * 300 + 0.25 * 1900 + 0.25 * 1900);
}

TEST(Fragmentation, LackOfCpuMakesAllIdleGpuFragment) {
  ClusterSnapshot snap = oneNode(2, 2000);
  ClusterState state(snap);
  FragmentationMeasure m({{shape(1, 1000, 4000), 1.0}}, state);
  EXPECT_DOUBLE_EQ(m.nodeFragMilli(state.nodes()[0]), 2000);
  FragmentationMeasure fits({{shape(1, 1000, 1000), 1.0}}, state);
  EXPECT_DOUBLE_EQ(fits.nodeFragMilli(state.nodes()[0]), 0);
}

TEST(Fragmentation, WrongModelMakesAllIdleGpuFragment) {
  ClusterSnapshot snap = oneNode(2, 8000, "T4");
  ClusterState state(snap);
  ReplicaShape s = shape(1, 1000, 1000);
  s.gpu_types = {"V100M32"};
  FragmentationMeasure m({{s, 1.0}}, state);
  EXPECT_DOUBLE_EQ(m.nodeFragMilli(state.nodes()[0]), 2000);
}

TEST(Fragmentation, FragAfterPlacement) {
  ClusterSnapshot snap = oneNode(2, 8000);
  ClusterState state(snap);
  FragmentationMeasure m({{shape(1, 600, 1000), 1.0}}, state);
  // After a 500-milli replica on GPU 0: 500 free there (< 600) is fragment.
  EXPECT_DOUBLE_EQ(m.fragMilliAfter(state.nodes()[0], shape(1, 500, 1000), {0}), 500);
  EXPECT_DOUBLE_EQ(m.clusterFragMilli(state), 0);
}

TEST(Fragmentation, TypicalWorkloadCoversNinetyFivePercentByFrequency) {
  std::vector<ReplicaShape> pods;
  for (int i = 0; i < 90; ++i) pods.push_back(shape(1, 1000, 4000));
  for (int i = 0; i < 6; ++i) pods.push_back(shape(1, 500, 2000));
  for (int i = 0; i < 4; ++i) pods.push_back(shape(8, 1000, 64000));
  Workload w = typicalWorkload(pods, 0.95);
  ASSERT_EQ(w.size(), 2u);  // 90 + 6 = 96% >= 95%
  EXPECT_EQ(w[0].shape.gpu_milli, 1000);
  EXPECT_DOUBLE_EQ(w[0].weight, 90.0 / 96.0);
  EXPECT_DOUBLE_EQ(w[1].weight, 6.0 / 96.0);
  EXPECT_EQ(typicalShapes(typicalWorkload(pods, 1.0), 0.95).size(), 2u);
}

}  // namespace
}  // namespace ty
