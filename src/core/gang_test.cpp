#include "core/gang.h"

#include <gtest/gtest.h>

#include <set>

namespace ty {
namespace {

NodeState node(const std::string& name, int gpus, int used = 0,
               std::map<std::string, std::string> labels = {}) {
  NodeState s;
  s.info.name = name;
  s.info.cpus = Quantity::whole(64);
  s.info.memory_bytes = 512LL << 30;
  s.info.labels = std::move(labels);
  for (int i = 0; i < gpus; ++i) s.info.gpus.push_back({i, name + std::to_string(i), "A100"});
  for (int i = 0; i < used; ++i) s.gpu_used_milli[i] = 1000;
  return s;
}

ReplicaShape gpus(int n, int milli = 1000) {
  ReplicaShape s;
  s.gpu_count = n;
  s.gpu_milli = milli;
  return s;
}

struct Fixture {
  explicit Fixture(ClusterSnapshot c) : snapshot(std::move(c)), state(snapshot) {
    policy = std::move(makePlacementPolicy("best-fit", {})).value();
  }
  std::set<std::string> nodesOf(const std::vector<NodeChoice>& choices) const {
    std::set<std::string> out;
    for (const auto& c : choices) out.insert(state.nodes()[c.node].info->name);
    return out;
  }
  ClusterSnapshot snapshot;
  ClusterState state;
  std::unique_ptr<PlacementPolicy> policy;
  Rng rng{1};
};

TEST(Gang, AllReplicasOrNoneAndTheStateIsUntouchedOnFailure) {
  Fixture f(ClusterSnapshot{{node("a", 4, 1), node("b", 4, 2)}});
  EXPECT_FALSE(placeGang(f.state, *f.policy, {gpus(2), 3, ""}, f.rng));
  EXPECT_EQ(replicaCapacity(f.state, 0, gpus(1)), 3);
  EXPECT_EQ(replicaCapacity(f.state, 1, gpus(1)), 2);
  auto placed = placeGang(f.state, *f.policy, {gpus(1), 5, ""}, f.rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(placed->size(), 5u);
  EXPECT_EQ(replicaCapacity(f.state, 0, gpus(1)) + replicaCapacity(f.state, 1, gpus(1)), 0);
}

TEST(Gang, AGangThatFitsOneNodeStaysOnOneNode) {
  Fixture f(ClusterSnapshot{{node("a", 8, 6), node("b", 8, 6), node("c", 8, 4)}});
  auto placed = placeGang(f.state, *f.policy, {gpus(1), 4, ""}, f.rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(f.nodesOf(*placed), (std::set<std::string>{"c"}));
}

TEST(Gang, SpansTheFewestNodes) {
  // 4 replicas of 2 GPUs: a, b, c hold one each, d and e three each. Two
  // nodes are needed: d takes three, and the fourth goes to the tightest
  // node that holds it (a), so e stays whole.
  Fixture f(ClusterSnapshot{
      {node("a", 8, 6), node("b", 8, 6), node("c", 8, 6), node("d", 8, 2), node("e", 8, 2)}});
  auto placed = placeGang(f.state, *f.policy, {gpus(2), 4, ""}, f.rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(f.nodesOf(*placed), (std::set<std::string>{"a", "d"}));
}

TEST(Gang, TheLastNodeIsTheTightestThatHoldsTheRest) {
  // 4 replicas of 2: c holds three (6 free); the last one goes to b (2 free)
  // rather than d (4 free).
  Fixture f(ClusterSnapshot{{node("b", 8, 6), node("c", 8, 2), node("d", 8, 4)}});
  auto placed = placeGang(f.state, *f.policy, {gpus(2), 4, ""}, f.rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(f.nodesOf(*placed), (std::set<std::string>{"b", "c"}));
}

TEST(Gang, SameLabelKeepsReplicasInOneRack) {
  Fixture f(ClusterSnapshot{{node("a1", 8, 0, {{"rack", "a"}}), node("a2", 8, 4, {{"rack", "a"}}),
                             node("b1", 8, 0, {{"rack", "b"}}), node("b2", 8, 0, {{"rack", "b"}}),
                             node("x", 8, 0)}});
  auto placed = placeGang(f.state, *f.policy, {gpus(8), 2, "rack"}, f.rng);
  ASSERT_TRUE(placed);
  EXPECT_EQ(f.nodesOf(*placed), (std::set<std::string>{"b1", "b2"}));
  // No rack has two more free nodes: the gang waits rather than split.
  EXPECT_FALSE(placeGang(f.state, *f.policy, {gpus(8), 2, "rack"}, f.rng));
}

TEST(Gang, FractionalReplicasShareGpus) {
  Fixture f(ClusterSnapshot{{node("a", 1)}});
  auto placed = placeGang(f.state, *f.policy, {gpus(1, 250), 4, ""}, f.rng);
  ASSERT_TRUE(placed);
  for (const auto& c : *placed) EXPECT_EQ(c.gpu_positions, std::vector<int>{0});
  EXPECT_FALSE(placeGang(f.state, *f.policy, {gpus(1, 250), 1, ""}, f.rng));
}

TEST(Gang, ReplicasGetDisjointGpus) {
  Fixture f(ClusterSnapshot{{node("a", 8, 0), node("b", 8, 0)}});
  auto placed = placeGang(f.state, *f.policy, {gpus(4), 4, ""}, f.rng);
  ASSERT_TRUE(placed);
  std::set<std::pair<std::size_t, int>> seen;
  for (const auto& c : *placed) {
    for (int p : c.gpu_positions) EXPECT_TRUE(seen.insert({c.node, p}).second);
  }
  EXPECT_EQ(seen.size(), 16u);
}

}  // namespace
}  // namespace ty
