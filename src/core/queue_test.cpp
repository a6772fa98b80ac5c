#include "core/queue.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

QueueConfig queue(const std::string& name, const std::string& cohort, Quota gpu) {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.cohort = cohort;
  q.quotas["gpu:A100"] = gpu;
  return q;
}

ResourceAmounts a100(std::int64_t gpus) { return {{"gpu:A100", gpus * 1000}}; }

TEST(Quota, AQueueWithoutCohortUsesExactlyItsNominal) {
  QuotaLedger l({queue("vision", "", Quota::units(8))});
  int q = l.find("vision");
  EXPECT_FALSE(l.check(q, a100(8)));
  l.add(q, a100(6));
  auto s = l.check(q, a100(4));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->needed, 2000);
  EXPECT_EQ(l.ceiling(q, "gpu:A100"), 8000);
}

TEST(Quota, BorrowsIdleQuotaOfTheCohortUpToItsBorrowingLimit) {
  QuotaLedger l({queue("vision", "lab", Quota::units(8, 4)), queue("nlp", "lab", Quota::units(8))});
  int v = l.find("vision");
  l.add(v, a100(8));
  EXPECT_FALSE(l.check(v, a100(4)));
  l.add(v, a100(2));
  EXPECT_TRUE(l.borrowing(v, "gpu:A100"));
  auto s = l.check(v, a100(4));
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->over_borrowing_limit);
  EXPECT_EQ(describeShortfall(l.config(v), *s),
            "project vision uses 10 of 8 nominal A100 GPUs; borrowing 2 of 4 allowed; needs 4 "
            "A100 GPUs, waiting for 2 of its own to be released");
  EXPECT_EQ(l.ceiling(v, "gpu:A100"), 12000);
}

TEST(Quota, BorrowingIsLimitedByWhatTheCohortHasIdle) {
  QuotaLedger l({queue("vision", "lab", Quota::units(8)), queue("nlp", "lab", Quota::units(8))});
  int v = l.find("vision");
  int n = l.find("nlp");
  l.add(n, a100(6));
  l.add(v, a100(8));
  auto s = l.check(v, a100(4));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->needed, 2000);
  EXPECT_EQ(describeShortfall(l.config(v), *s),
            "project vision uses 8 of 8 nominal A100 GPUs; borrowing 0, cohort lab has 2 idle; "
            "waiting for 2 A100 GPUs");
}

TEST(Quota, AQueueBelowNominalIsShortWhileOthersBorrowItsShare) {
  QuotaLedger l({queue("vision", "lab", Quota::units(4)), queue("nlp", "lab", Quota::units(4))});
  int v = l.find("vision");
  int n = l.find("nlp");
  l.add(n, a100(8));
  EXPECT_TRUE(l.check(v, a100(1)));
  EXPECT_TRUE(l.withinNominal(v, a100(4)));
  EXPECT_FALSE(l.withinNominal(v, a100(5)));
  l.remove(n, a100(4));
  EXPECT_FALSE(l.check(v, a100(4)));
}

TEST(Quota, BorrowersMayNotTakeQuotaAQueueBelowNominalClaims) {
  QuotaLedger l({queue("vision", "lab", Quota::units(4)), queue("nlp", "lab", Quota::units(4))});
  int v = l.find("vision");
  int n = l.find("nlp");
  l.add(n, a100(5));
  l.add(v, a100(1));
  // 2 idle; vision waits for 3 more within its nominal, of which 2 are idle.
  l.setClaim(v, a100(3));
  auto s = l.check(n, a100(1));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->cohort_claimed, 2000);
  EXPECT_EQ(describeShortfall(l.config(n), *s),
            "project nlp uses 5 of 4 nominal A100 GPUs; borrowing 1, cohort lab has 2 idle (2 held "
            "for queues below their nominal); waiting for 1 A100 GPUs");
  // The claimer itself, and work within nominal, are not held back.
  EXPECT_FALSE(l.check(v, a100(2)));
  // The claim shrinks as vision's usage reaches its nominal.
  l.add(v, a100(2));
  l.reduceClaim(v, a100(2));
  EXPECT_FALSE(l.check(n, a100(0)));
  l.remove(n, a100(1));
  // vision at 3 of 4 with 1 claimed: 1 idle, held for it.
  EXPECT_TRUE(l.check(n, a100(1)));
  l.setClaim(v, {});
  EXPECT_FALSE(l.check(n, a100(1)));
}

TEST(Quota, LendingLimitKeepsPartOfTheNominalHome) {
  QuotaLedger l({queue("vision", "lab", Quota::units(8, std::nullopt, 2)),
                 queue("nlp", "lab", Quota::units(8))});
  int n = l.find("nlp");
  // nlp may use its own 8 and the 2 vision lends, not more.
  EXPECT_EQ(l.ceiling(n, "gpu:A100"), 10000);
  l.add(n, a100(10));
  EXPECT_TRUE(l.check(n, a100(1)));
  // vision's 6 unlendable GPUs are still there for it.
  EXPECT_FALSE(l.check(l.find("vision"), a100(6)));
  EXPECT_TRUE(l.check(l.find("vision"), a100(7)));
}

TEST(Quota, UncoveredResourcesAndUnknownQueuesAreNotLimited) {
  QuotaLedger l({queue("vision", "", Quota::units(1))});
  EXPECT_EQ(l.find("other"), -1);
  EXPECT_FALSE(l.check(-1, a100(100)));
  EXPECT_FALSE(l.check(l.find("vision"), {{"cpu", 1'000'000}}));
  EXPECT_FALSE(l.ceiling(l.find("vision"), "cpu"));
}

TEST(Quota, NamesAmountsInTheirUnits) {
  EXPECT_EQ(formatAmount("memory", 16LL << 30), "16Gi");
  EXPECT_EQ(formatAmount("gpu", 500), "0.5");
  EXPECT_EQ(resourceNoun("gpu:H100"), "H100 GPUs");
  QueueConfig q;
  q.name = "vision-batch";
  q.project = "vision";
  EXPECT_EQ(describeOwner(q), "project vision (queue vision-batch)");
}

}  // namespace
}  // namespace ty
