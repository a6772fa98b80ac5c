#include "core/preemption.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace ty {
namespace {

TEST(Preemption, LowestPriorityThenLeastWorkLostThenNewest) {
  const Timestamp now = 1000;
  VictimInfo low{JobId(1), 0, 100, 0, 0};
  VictimInfo high{JobId(2), 5, 900, 0, 0};
  EXPECT_TRUE(stopsBefore(low, high, now));
  // Same priority: the one that checkpointed recently loses less.
  VictimInfo old_ckpt{JobId(3), 0, 100, 950, 0};
  EXPECT_EQ(workAtRisk(old_ckpt, now), 50);
  EXPECT_EQ(workAtRisk(low, now), 900);
  EXPECT_TRUE(stopsBefore(old_ckpt, low, now));
  // Same work at risk: the newest goes first.
  VictimInfo a{JobId(4), 0, 500, 0, 0};
  VictimInfo b{JobId(5), 0, 400, 900, 0};
  EXPECT_EQ(workAtRisk(a, now), 500);
  EXPECT_EQ(workAtRisk(b, now), 100);
  VictimInfo c{JobId(6), 0, 600, 0, 0};
  VictimInfo d{JobId(7), 0, 400, 600, 0};
  EXPECT_TRUE(stopsBefore(c, d, now));
}

TEST(Preemption, MinRuntimeProtects) {
  VictimInfo v{JobId(1), 0, 100, 0, 500};
  EXPECT_TRUE(protectedByMinRuntime(v, 599));
  EXPECT_FALSE(protectedByMinRuntime(v, 600));
  v.min_runtime = 0;
  EXPECT_FALSE(protectedByMinRuntime(v, 100));
}

TEST(Preemption, ChoosesOnlyTheVictimsNeeded) {
  // Victim sizes; the preemptor needs 4.
  std::vector<int> size{1, 1, 4, 2};
  std::vector<bool> released(size.size(), false);
  VictimSearch search;
  search.release = [&](std::size_t i) {
    EXPECT_FALSE(released[i]);
    released[i] = true;
  };
  search.restore = [&](std::size_t i) {
    EXPECT_TRUE(released[i]);
    released[i] = false;
  };
  search.fits = [&] {
    int freed = 0;
    for (std::size_t i = 0; i < size.size(); ++i) freed += released[i] ? size[i] : 0;
    return freed >= 4;
  };
  auto v = chooseVictims(size.size(), search);
  ASSERT_TRUE(v);
  // The shortest prefix is {0, 1, 2}; 0 and 1 turn out to be unnecessary.
  EXPECT_EQ(*v, std::vector<std::size_t>{2});
  EXPECT_EQ(std::count(released.begin(), released.end(), true), 0);
  EXPECT_FALSE(chooseVictims(2, search));
  EXPECT_EQ(std::count(released.begin(), released.end(), true), 0);
}

}  // namespace
}  // namespace ty
