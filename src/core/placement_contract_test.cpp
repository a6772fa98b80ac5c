// The contract every placement policy keeps, run against each name that
// placementPolicyNames() lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/placement.h"

namespace ty {
namespace {

NodeState makeNode(const std::string& name, int gpus, const std::string& model, int cpus,
                   std::int64_t mem_gib, std::map<std::string, std::string> labels = {}) {
  NodeState n;
  n.info.name = name;
  n.info.cpus = Quantity::whole(cpus);
  n.info.memory_bytes = mem_gib << 30;
  n.info.labels = std::move(labels);
  for (int g = 0; g < gpus; ++g) n.info.gpus.push_back({g, "uuid", model, 0, true});
  return n;
}

ReplicaShape makeShape(int gpus, int milli, int cpus, std::int64_t mem_gib) {
  ReplicaShape s;
  s.gpu_count = gpus;
  s.gpu_milli = milli;
  s.cpus = Quantity::whole(cpus);
  s.memory_bytes = mem_gib << 30;
  return s;
}

Workload smallWorkload() {
  return {{makeShape(1, 1000, 4, 8), 0.4},
          {makeShape(1, 500, 2, 4), 0.3},
          {makeShape(2, 1000, 8, 16), 0.2},
          {makeShape(0, 1000, 4, 4), 0.1}};
}

class PlacementContract : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<PlacementPolicy> policy() {
    auto p = makePlacementPolicy(GetParam(), smallWorkload());
    EXPECT_TRUE(p.isOk()) << p.status().message();
    return std::move(p).value();
  }
};

// A random small cluster and a random shape, from one seed.
ClusterSnapshot randomCluster(Rng& rng) {
  ClusterSnapshot snap;
  const char* models[] = {"A100", "T4", "H100"};
  std::size_t n = 1 + rng.below(6);
  for (std::size_t i = 0; i < n; ++i) {
    auto node =
        makeNode("n" + std::to_string(i), static_cast<int>(rng.below(9)), models[rng.below(3)],
                 4 + static_cast<int>(rng.below(60)), 8 + static_cast<std::int64_t>(rng.below(200)),
                 rng.below(2) ? std::map<std::string, std::string>{{"zone", "a"}}
                              : std::map<std::string, std::string>{});
    for (const auto& g : node.info.gpus) {
      if (rng.below(3) == 0) node.gpu_used_milli[g.index] = static_cast<int>(rng.below(11)) * 100;
    }
    node.used_cpus = Quantity::whole(static_cast<std::int64_t>(rng.below(4)));
    snap.nodes.push_back(std::move(node));
  }
  return snap;
}

ReplicaShape randomShape(Rng& rng) {
  const int counts[] = {0, 1, 1, 1, 2, 4, 8};
  ReplicaShape s = makeShape(counts[rng.below(7)], 1000, 1 + static_cast<int>(rng.below(16)),
                             1 + static_cast<std::int64_t>(rng.below(64)));
  if (s.gpu_count == 1 && rng.below(2)) s.gpu_milli = 100 * (1 + static_cast<int>(rng.below(9)));
  if (rng.below(4) == 0) s.gpu_types = {rng.below(2) ? "a100" : "T4"};
  if (rng.below(4) == 0) s.node_selector = {{"zone", "a"}};
  return s;
}

bool bruteForceFits(const ClusterState& state, const ReplicaShape& shape) {
  for (std::size_t i = 0; i < state.nodes().size(); ++i) {
    if (state.fits(i, shape)) return true;
  }
  return false;
}

TEST_P(PlacementContract, ReturnsNulloptExactlyWhenNothingFitsAndNeverOverCommits) {
  Rng gen(7);
  auto p = policy();
  for (int trial = 0; trial < 300; ++trial) {
    ClusterSnapshot snap = randomCluster(gen);
    ClusterState state(snap);
    Rng rng(static_cast<std::uint64_t>(trial));
    for (int k = 0; k < 20; ++k) {
      ReplicaShape shape = randomShape(gen);
      const bool feasible = bruteForceFits(state, shape);
      auto choice = p->choose(state, shape, rng);
      ASSERT_EQ(choice.has_value(), feasible) << "trial " << trial;
      if (!choice) continue;
      ASSERT_TRUE(state.fits(choice->node, shape));
      ASSERT_EQ(static_cast<int>(choice->gpu_positions.size()), shape.gpu_count);
      std::set<int> distinct(choice->gpu_positions.begin(), choice->gpu_positions.end());
      ASSERT_EQ(distinct.size(), choice->gpu_positions.size()) << "GPUs must be distinct";
      const NodeFree& node = state.nodes()[choice->node];
      for (int pos : choice->gpu_positions) {
        ASSERT_GE(node.gpu_free[static_cast<std::size_t>(pos)], shape.gpu_milli);
        ASSERT_TRUE(
            gpuModelMatches(shape.gpu_types, node.info->gpus[static_cast<std::size_t>(pos)].model));
      }
      for (const auto& [key, value] : shape.node_selector) {
        ASSERT_EQ(node.info->labels.at(key), value);
      }
      state.take(*choice, shape);
      const NodeFree& after = state.nodes()[choice->node];
      ASSERT_GE(after.free_cpus.milli(), 0);
      ASSERT_GE(after.free_memory, 0);
      for (std::size_t g = 0; g < after.gpu_free.size(); ++g) {
        if (after.info->gpus[g].healthy) {
          ASSERT_GE(after.gpu_free[g], 0);
        }
      }
    }
  }
}

TEST_P(PlacementContract, SameSeedSameChoices) {
  auto run = [&] {
    Rng gen(11);
    auto p = policy();
    std::vector<std::optional<NodeChoice>> out;
    for (int trial = 0; trial < 30; ++trial) {
      ClusterSnapshot snap = randomCluster(gen);
      ClusterState state(snap);
      Rng rng(99);
      for (int k = 0; k < 10; ++k) {
        ReplicaShape shape = randomShape(gen);
        auto c = p->choose(state, shape, rng);
        if (c) state.take(*c, shape);
        out.push_back(c);
      }
    }
    return out;
  };
  EXPECT_EQ(run(), run());
}

TEST_P(PlacementContract, SharesOneGpuBetweenFractionalReplicas) {
  ClusterSnapshot snap;
  snap.nodes.push_back(makeNode("a", 1, "A100", 64, 256));
  ClusterState state(snap);
  Rng rng(1);
  auto p = policy();
  ReplicaShape half = makeShape(1, 500, 1, 1);
  for (int i = 0; i < 2; ++i) {
    auto c = p->choose(state, half, rng);
    ASSERT_TRUE(c);
    state.take(*c, half);
  }
  EXPECT_EQ(state.nodes()[0].gpu_free[0], 0);
  EXPECT_FALSE(p->choose(state, half, rng));
}

TEST_P(PlacementContract, PrefersWellLinkedGpus) {
  // Eight GPUs; NVLink only inside {0,1,2,3}... except 0 is taken, and
  // {4,5,6,7} are fully linked: a 4-GPU replica should get 4..7.
  ClusterSnapshot snap;
  NodeState n = makeNode("a", 8, "H100", 128, 1024);
  n.info.gpu_links.assign(8, std::vector<int>(8, 0));
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a != b && (a < 4) == (b < 4))
        n.info.gpu_links[static_cast<std::size_t>(a)][static_cast<std::size_t>(b)] = 18;
    }
  }
  n.gpu_used_milli[0] = 1000;
  snap.nodes.push_back(std::move(n));
  ClusterState state(snap);
  Rng rng(1);
  auto c = policy()->choose(state, makeShape(4, 1000, 8, 8), rng);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->gpu_positions, (std::vector<int>{4, 5, 6, 7}));
}

TEST_P(PlacementContract, HonoursGpuTypesAndLabels) {
  ClusterSnapshot snap;
  snap.nodes.push_back(makeNode("t4", 4, "NVIDIA T4", 64, 256));
  snap.nodes.push_back(makeNode("a100", 4, "NVIDIA A100-SXM4-80GB", 64, 256, {{"zone", "b"}}));
  snap.nodes.push_back(makeNode("a100z", 4, "NVIDIA A100-SXM4-80GB", 64, 256, {{"zone", "a"}}));
  ClusterState state(snap);
  Rng rng(1);
  auto p = policy();
  ReplicaShape s = makeShape(2, 1000, 1, 1);
  s.gpu_types = {"a100"};
  s.node_selector = {{"zone", "a"}};
  for (int i = 0; i < 2; ++i) {
    auto c = p->choose(state, s, rng);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->node, 2u);
    state.take(*c, s);
  }
  EXPECT_FALSE(p->choose(state, s, rng));
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, PlacementContract,
                         ::testing::ValuesIn(placementPolicyNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string n = info.param;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

TEST(PlacementFactory, RejectsUnknownNamesAndListsTrainyardFirst) {
  EXPECT_FALSE(makePlacementPolicy("nope", {}).isOk());
  EXPECT_EQ(placementPolicyNames().front(), "trainyard");
}

}  // namespace
}  // namespace ty
