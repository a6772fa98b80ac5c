#include "sim/openb_replay.h"

#include <gtest/gtest.h>

#include "sim/trace_csv.h"

namespace ty {
namespace {

struct Sample {
  std::vector<OpenbNode> nodes;
  std::vector<OpenbPod> pods;
};

const Sample& sample() {
  static const Sample s = [] {
    const std::string dir = std::string(TY_SOURCE_DIR) + "/tests/data/openb/";
    Sample out;
    auto n = readTextFile(dir + "openb_node_list_gpu_node.csv");
    auto p = readTextFile(dir + "openb_pod_list_sample.csv");
    EXPECT_TRUE(n.isOk() && p.isOk());
    out.nodes = parseOpenbNodes(*n, "nodes").value();
    out.pods = parseOpenbPods(*p, "pods").value();
    return out;
  }();
  return s;
}

OpenbRunResult run(const std::string& policy_name, std::uint64_t seed, double tune = 1.3) {
  const ClusterSnapshot cluster = openbSnapshot(sample().nodes);
  auto policy = makePlacementPolicy(policy_name, openbWorkload(sample().pods, 1.0)).value();
  return replayOpenb(cluster, sample().pods, openbWorkload(sample().pods, 0.95), *policy, tune,
                     seed);
}

TEST(OpenbReplay, SampleHasTheFullGpuCluster) {
  EXPECT_EQ(sample().nodes.size(), 1213u);
  EXPECT_GT(sample().pods.size(), 300u);
  EXPECT_EQ(run("best-fit", 1, 0.5).capacity_milli, 6212000);
}

TEST(OpenbReplay, FgdAndTrainyardBeatRandomAndNobodyOverCommits) {
  auto random = run("random", 42);
  auto fgd = run("fgd", 42);
  auto trainyard = run("trainyard", 42);
  for (const auto* r : {&random, &fgd, &trainyard}) {
    EXPECT_TRUE(r->consistent);
    EXPECT_GE(r->pods, r->placed);
    EXPECT_LE(r->alloc_pct[130], 100.0);
  }
  EXPECT_GT(fgd.alloc_pct[100], random.alloc_pct[100] + 3);
  EXPECT_GT(trainyard.alloc_pct[100], random.alloc_pct[100] + 3);
}

TEST(OpenbReplay, InflatesToTuneTimesCapacityAndSamplesEveryPoint) {
  auto r = run("best-fit", 7);
  for (int k = 1; k <= kOpenbMaxArrivedPct; ++k) {
    EXPECT_FALSE(std::isnan(r.alloc_pct[static_cast<std::size_t>(k)])) << k;
  }
  // Below saturation every arriving GPU is allocated.
  EXPECT_NEAR(r.alloc_pct[50], 50, 1.0);
}

TEST(OpenbReplay, SameSeedSameResultOtherSeedOtherOrder) {
  auto a = run("packing", 3, 0.8), b = run("packing", 3, 0.8), c = run("random", 4, 0.8);
  // Points past 80% arrive never at tune 0.8 and hold NaN: compare the rest.
  for (std::size_t k = 0; k <= 78; ++k) {
    EXPECT_EQ(a.alloc_pct[k], b.alloc_pct[k]) << k;
    EXPECT_EQ(a.frag_pct[k], b.frag_pct[k]) << k;
  }
  EXPECT_EQ(a.placed, b.placed);
  auto d = run("random", 5, 0.8);
  EXPECT_NE(c.frag_pct[70], d.frag_pct[70]);
}

}  // namespace
}  // namespace ty
