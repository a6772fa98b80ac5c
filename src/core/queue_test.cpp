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

// checkQuotaCeiling: what a queue could never admit, refused at submit.

ResourceAmounts gpus(std::int64_t n) { return {{"gpu", n * 1000}}; }

QueueConfig quotaQueue(const std::string& name, const std::string& cohort,
                       std::map<std::string, Quota> quotas) {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.cohort = cohort;
  q.quotas = std::move(quotas);
  return q;
}

TEST(QuotaCeiling, AQueueWithoutCohortMayHoldItsNominal) {
  QuotaLedger l({queue("nlp", "", Quota::units(8))});
  int q = l.find("nlp");
  EXPECT_TRUE(checkQuotaCeiling(l, q, a100(8), 1).isOk());
  Status st = checkQuotaCeiling(l, q, a100(9), 1);
  EXPECT_EQ(st.code(), StatusCode::kInfeasible);
  EXPECT_EQ(st.field(), "resources.gpus");
  EXPECT_EQ(st.message(),
            "project nlp may use at most 8 A100 GPUs in queue nlp (nominal 8, no cohort to borrow "
            "from); this job asks for 9; reduce resources.gpus, or ask an admin to raise the "
            "queue's quota");
  // A borrowing limit without a cohort lends nothing.
  QuotaLedger alone({queue("nlp", "", Quota::units(8, 4))});
  EXPECT_FALSE(checkQuotaCeiling(alone, 0, a100(9), 1).isOk());
}

TEST(QuotaCeiling, ABorrowingLimitOfZeroKeepsTheQueueAtItsNominal) {
  QuotaLedger l({queue("nlp", "lab", Quota::units(8, 0)), queue("vision", "lab", Quota::units(8))});
  int q = l.find("nlp");
  EXPECT_TRUE(checkQuotaCeiling(l, q, a100(4), 2).isOk());
  Status st = checkQuotaCeiling(l, q, a100(8), 2);
  EXPECT_EQ(st.code(), StatusCode::kInfeasible);
  // One replica fits, the gang does not: fewer replicas would do.
  EXPECT_EQ(st.field(), "replicas");
  EXPECT_EQ(st.message(),
            "project nlp may use at most 8 A100 GPUs in queue nlp (nominal 8, borrowing limit 0); "
            "this job asks for 16 (2 replicas x 8); reduce resources.gpus or replicas, or ask an "
            "admin to raise the queue's quota");
}

TEST(QuotaCeiling, ABorrowingLimitAddsToTheNominal) {
  QuotaLedger l({queue("vision", "lab", Quota::units(8, 4)), queue("nlp", "lab", Quota::units(8))});
  int v = l.find("vision");
  EXPECT_TRUE(checkQuotaCeiling(l, v, a100(6), 2).isOk());
  Status st = checkQuotaCeiling(l, v, a100(13), 1);
  EXPECT_EQ(st.field(), "resources.gpus");
  EXPECT_EQ(st.message(),
            "project vision may use at most 12 A100 GPUs in queue vision (nominal 8, borrowing "
            "limit 4); this job asks for 13; reduce resources.gpus, or ask an admin to raise the "
            "queue's quota");
}

TEST(QuotaCeiling, WithoutABorrowingLimitTheCohortLendsWhatItsLendingLimitsAllow) {
  // nlp lends 2 of its 8, speech none of its 4: vision can reach 8 + 2.
  QuotaLedger l({queue("vision", "lab", Quota::units(8)),
                 queue("nlp", "lab", Quota::units(8, std::nullopt, 2)),
                 queue("speech", "lab", Quota::units(4, std::nullopt, 0)),
                 queue("robotics", "other", Quota::units(16))});
  int v = l.find("vision");
  EXPECT_EQ(l.lendableByOthers(v, "gpu:A100"), 2000);
  EXPECT_TRUE(checkQuotaCeiling(l, v, a100(5), 2).isOk());
  Status st = checkQuotaCeiling(l, v, a100(6), 2);
  EXPECT_EQ(st.field(), "replicas");
  EXPECT_EQ(st.message(),
            "project vision may use at most 10 A100 GPUs in queue vision (nominal 8, the rest of "
            "cohort lab can lend 2); this job asks for 12 (2 replicas x 6); reduce resources.gpus "
            "or replicas, or ask an admin to raise the queue's quota");
  // A lending limit bounds only what others take: nlp may use all 8 of its
  // own, plus all 8 of vision's (speech lends nothing).
  EXPECT_TRUE(checkQuotaCeiling(l, l.find("nlp"), a100(16), 1).isOk());
  EXPECT_FALSE(checkQuotaCeiling(l, l.find("nlp"), a100(17), 1).isOk());
}

TEST(QuotaCeiling, ABorrowingLimitAboveWhatTheCohortLendsNamesBoth) {
  QuotaLedger l({queue("vision", "lab", Quota::units(8, 6)),
                 queue("nlp", "lab", Quota::units(8, std::nullopt, 2))});
  Status st = checkQuotaCeiling(l, l.find("vision"), a100(11), 1);
  EXPECT_EQ(st.message(),
            "project vision may use at most 10 A100 GPUs in queue vision (nominal 8, borrowing "
            "limit 6, the rest of cohort lab can lend 2); this job asks for 11; reduce "
            "resources.gpus, or ask an admin to raise the queue's quota");
}

TEST(QuotaCeiling, AllReplicasCountAndAReplicaTooLargeAloneNamesItsResource) {
  QuotaLedger l({queue("vision", "", Quota::units(12))});
  int v = l.find("vision");
  EXPECT_TRUE(checkQuotaCeiling(l, v, a100(4), 3).isOk());
  EXPECT_EQ(checkQuotaCeiling(l, v, a100(4), 4).field(), "replicas");
  // 16 per replica is over even with one replica: the replica count is not
  // what to change.
  Status st = checkQuotaCeiling(l, v, a100(16), 2);
  EXPECT_EQ(st.field(), "resources.gpus");
  EXPECT_EQ(st.message(),
            "project vision may use at most 12 A100 GPUs in queue vision (nominal 12, no cohort to "
            "borrow from); this job asks for 32 (2 replicas x 16); reduce resources.gpus, or ask "
            "an admin to raise the queue's quota");
}

TEST(QuotaCeiling, MemoryAndCpusAreWordedInTheirUnits) {
  QuotaLedger l({quotaQueue(
      "nlp", "",
      {{"memory", Quota{256LL << 30, std::nullopt, std::nullopt}}, {"cpu", Quota::units(64)}})});
  int q = l.find("nlp");
  Status mem = checkQuotaCeiling(l, q, {{"memory", 96LL << 30}}, 4);
  EXPECT_EQ(mem.code(), StatusCode::kInfeasible);
  EXPECT_EQ(mem.field(), "replicas");
  EXPECT_EQ(mem.message(),
            "project nlp may use at most 256Gi of memory in queue nlp (nominal 256Gi, no cohort to "
            "borrow from); this job asks for 384Gi (4 replicas x 96Gi); reduce resources.memory "
            "or replicas, or ask an admin to raise the queue's quota");
  Status cpu = checkQuotaCeiling(l, q, {{"cpu", 96'000}}, 1);
  EXPECT_EQ(cpu.field(), "resources.cpus");
  EXPECT_EQ(cpu.message(),
            "project nlp may use at most 64 CPUs in queue nlp (nominal 64, no cohort to borrow "
            "from); this job asks for 96; reduce resources.cpus, or ask an admin to raise the "
            "queue's quota");
  Status half = checkQuotaCeiling(l, q, {{"memory", 1536LL << 20}, {"cpu", 200}}, 200);
  EXPECT_EQ(half.message(),
            "project nlp may use at most 256Gi of memory in queue nlp (nominal 256Gi, no cohort to "
            "borrow from); this job asks for 300Gi (200 replicas x 1536Mi); reduce "
            "resources.memory or replicas, or ask an admin to raise the queue's quota");
}

TEST(QuotaCeiling, GpusAreReportedFirstAndOneGpuIsSingular) {
  QuotaLedger l({quotaQueue("nlp", "", {{"gpu", Quota::units(1)}, {"cpu", Quota::units(4)}})});
  ResourceAmounts both = {{"gpu", 2000}, {"cpu", 8000}};
  Status st = checkQuotaCeiling(l, l.find("nlp"), both, 1);
  EXPECT_EQ(st.field(), "resources.gpus");
  EXPECT_EQ(st.message(),
            "project nlp may use at most 1 GPU in queue nlp (nominal 1, no cohort to borrow "
            "from); this job asks for 2; reduce resources.gpus, or ask an admin to raise the "
            "queue's quota");
}

TEST(QuotaCeiling, AQueueOfNoProjectIsNamedAlone) {
  QueueConfig q = quotaQueue("shared", "", {{"gpu", Quota::units(2)}});
  q.project.clear();
  QuotaLedger l({q});
  EXPECT_EQ(checkQuotaCeiling(l, 0, gpus(3), 1).message(),
            "queue shared may use at most 2 GPUs (nominal 2, no cohort to borrow from); this job "
            "asks for 3; reduce resources.gpus, or ask an admin to raise the queue's quota");
}

TEST(QuotaCeiling, WhatNoQuotaCoversIsNotLimited) {
  QuotaLedger l({queue("vision", "", Quota::units(1))});
  int v = l.find("vision");
  // No "gpu", "cpu" or "memory" quota: only A100s are limited.
  ResourceAmounts big = {{"gpu", 64'000}, {"cpu", 1'000'000}, {"memory", 1LL << 40}};
  EXPECT_TRUE(checkQuotaCeiling(l, v, big, 8).isOk());
  // A queue without a config is not limited at all.
  EXPECT_TRUE(checkQuotaCeiling(l, -1, a100(100), 8).isOk());
  EXPECT_TRUE(checkQuotaCeiling(l, v, {}, 1).isOk());
}

}  // namespace
}  // namespace ty
