#include "core/fair_share.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

constexpr DurationMs kHour = 3600 * 1000;

TEST(FairShare, UsageHalvesEveryHalfLife) {
  DecayedUsage u{1000, 10, 4};
  DecayedUsage d = decayUsage(u, 2 * kHour, kHour);
  EXPECT_DOUBLE_EQ(d.gpu, 250);
  EXPECT_DOUBLE_EQ(d.cpu, 2.5);
  EXPECT_DOUBLE_EQ(decayFactor(kHour, 0), 1);
}

TEST(FairShare, AccumulationDoesNotDependOnTheStepSize) {
  ResourceRate held{8000, 64000, 1e9};
  DecayedUsage one = accumulateUsage({}, held, 10 * kHour, 3 * kHour);
  DecayedUsage many;
  for (int i = 0; i < 10; ++i) many = accumulateUsage(many, held, kHour, 3 * kHour);
  EXPECT_NEAR(one.gpu, many.gpu, one.gpu * 1e-9);
  EXPECT_NEAR(one.memory, many.memory, one.memory * 1e-9);
  // Without decay it is simply amount times time.
  EXPECT_DOUBLE_EQ(accumulateUsage({}, held, kHour, 0).gpu, 8000.0 * kHour);
}

TEST(FairShare, DominantResourceAndWeightDecide) {
  ResourceRate cap{16000, 100000, 1000};
  // GPU-heavy: half the GPUs; CPU-heavy: 80% of the CPUs.
  double gpu_heavy = dominantShare({8000, 1000, 0}, {}, cap, kHour, 1);
  double cpu_heavy = dominantShare({1000, 80000, 0}, {}, cap, kHour, 1);
  EXPECT_DOUBLE_EQ(gpu_heavy, 0.5);
  EXPECT_DOUBLE_EQ(cpu_heavy, 0.8);
  EXPECT_DOUBLE_EQ(dominantShare({1000, 80000, 0}, {}, cap, kHour, 2), 0.4);
}

TEST(FairShare, PastUsageCountsAsAFractionOfTheDecayWindow) {
  ResourceRate cap{16000, 0, 0};
  // Holding the whole cluster forever converges to a past share of 1.
  DecayedUsage u = accumulateUsage({}, cap, 1000 * kHour, kHour);
  EXPECT_NEAR(dominantShare({}, u, cap, kHour, 1), 1.0, 1e-9);
  // Long ago usage fades.
  EXPECT_LT(dominantShare({}, decayUsage(u, 10 * kHour, kHour), cap, kHour, 1), 0.001);
}

}  // namespace
}  // namespace ty
