#include "core/backfill.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

NodeState node(const std::string& name, int gpus) {
  NodeState s;
  s.info.name = name;
  for (int i = 0; i < gpus; ++i) s.info.gpus.push_back({i, name + std::to_string(i), "A100"});
  return s;
}

ReplicaShape gpus(int n) {
  ReplicaShape s;
  s.gpu_count = n;
  return s;
}

// A running job on `node` holding GPU positions [first, first + n) until `at`.
Release holding(std::size_t node, int first, int n, Timestamp at) {
  Release r;
  r.at = at;
  r.shape = gpus(n);
  NodeChoice c{node, {}};
  for (int i = 0; i < n; ++i) c.gpu_positions.push_back(first + i);
  r.choices.push_back(c);
  return r;
}

struct Fixture {
  Fixture(ClusterSnapshot c, std::vector<Release> r)
      : snapshot(std::move(c)), state(snapshot), releases(std::move(r)) {
    for (const auto& rel : releases) takeAll(state, rel.choices, rel.shape);
    sortReleases(releases);
    policy = std::move(makePlacementPolicy("best-fit", {})).value();
  }
  ClusterSnapshot snapshot;
  ClusterState state;
  std::vector<Release> releases;
  std::unique_ptr<PlacementPolicy> policy;
  Rng rng{1};
};

TEST(Backfill, ReservesAtTheFirstEndThatMakesRoom) {
  // 8 GPUs: jobs end at 100 (2 GPUs), 300 (4 GPUs), never (2 GPUs).
  Fixture f(ClusterSnapshot{{node("a", 8)}},
            {holding(0, 0, 2, 100), holding(0, 2, 4, 300), holding(0, 6, 2, 0)});
  auto r = reserve(f.state, f.releases, {gpus(2), 1, ""}, *f.policy, f.rng, 50);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 100);
  r = reserve(f.state, f.releases, {gpus(6), 1, ""}, *f.policy, f.rng, 50);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 300);
  EXPECT_EQ(r->choices[0].gpu_positions, (std::vector<int>{0, 1, 2, 3, 4, 5}));
  // The state is handed back as it was.
  EXPECT_TRUE(f.state.usableGpus(0, gpus(1)).empty());
}

TEST(Backfill, AJobNeedingAJobWithoutMaxRuntimeHasNoKnownStart) {
  Fixture f(ClusterSnapshot{{node("a", 8)}}, {holding(0, 0, 4, 100), holding(0, 4, 4, 0)});
  auto r = reserve(f.state, f.releases, {gpus(8), 1, ""}, *f.policy, f.rng, 50);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->start, 0);
  EXPECT_FALSE(reserve(f.state, f.releases, {gpus(9), 1, ""}, *f.policy, f.rng, 50));
}

TEST(Backfill, OnlyJobsEndingByTheShadowTimeMayUseReservedResources) {
  EXPECT_TRUE(endsBefore(0, 100, 100));
  EXPECT_FALSE(endsBefore(0, 101, 100));
  EXPECT_FALSE(endsBefore(0, 0, 100));  // no max_runtime: may run forever
  EXPECT_FALSE(endsBefore(0, 10, 0));   // unknown start: nothing fits before it
}

TEST(Backfill, ReleasesThatNeverEndSortLast) {
  std::vector<Release> r{holding(0, 0, 1, 0), holding(0, 1, 1, 30), holding(0, 2, 1, 10)};
  sortReleases(r);
  EXPECT_EQ(r[0].at, 10);
  EXPECT_EQ(r[1].at, 30);
  EXPECT_EQ(r[2].at, 0);
}

}  // namespace
}  // namespace ty
