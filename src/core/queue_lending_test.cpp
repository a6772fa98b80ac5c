// What a queue borrows from its cohort and lends to it (QuotaLedger::
// borrowed and lent), as GET /api/v1/queues reports them.
#include <gtest/gtest.h>

#include "core/queue.h"

namespace ty {
namespace {

QueueConfig gpuQueue(const std::string& name, const std::string& cohort, Quota gpu) {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.cohort = cohort;
  q.quotas["gpu"] = gpu;
  return q;
}

ResourceAmounts gpus(std::int64_t n) { return {{"gpu", n * 1000}}; }

TEST(QuotaLending, OneLenderLendsWhatTheBorrowerTakesAboveNominal) {
  QuotaLedger l(
      {gpuQueue("vision", "lab", Quota::units(8)), gpuQueue("nlp", "lab", Quota::units(4))});
  const int vision = l.find("vision");
  const int nlp = l.find("nlp");
  l.add(vision, gpus(2));
  l.add(nlp, gpus(7));
  EXPECT_EQ(l.borrowed(nlp, "gpu"), 3000);
  EXPECT_EQ(l.lent(nlp, "gpu"), 0);
  EXPECT_EQ(l.borrowed(vision, "gpu"), 0);
  EXPECT_EQ(l.lent(vision, "gpu"), 3000);
  // Not covered by any quota: nothing either way.
  EXPECT_EQ(l.borrowed(nlp, "cpu"), 0);
  EXPECT_EQ(l.lent(vision, "cpu"), 0);
  EXPECT_EQ(l.lent(-1, "gpu"), 0);
}

TEST(QuotaLending, BorrowedQuotaIsChargedToLendersByTheirIdleQuota) {
  // a leaves 6 idle, b 2 (its lending limit), c borrows 4: 3 from a, 1 from b.
  QuotaLedger l({gpuQueue("a", "lab", Quota::units(6)),
                 gpuQueue("b", "lab", Quota::units(4, std::nullopt, 2)),
                 gpuQueue("c", "lab", Quota::units(2))});
  l.add(l.find("b"), gpus(1));
  l.add(l.find("c"), gpus(6));
  EXPECT_EQ(l.borrowed(l.find("c"), "gpu"), 4000);
  EXPECT_EQ(l.lent(l.find("a"), "gpu"), 3000);
  EXPECT_EQ(l.lent(l.find("b"), "gpu"), 1000);
  EXPECT_EQ(l.lent(l.find("c"), "gpu"), 0);
}

TEST(QuotaLending, RoundingRemainderGoesToTheFirstLendersAndSharesAddUp) {
  // Three lenders with 1 GPU idle each share 1 borrowed GPU (1000 milli):
  // 333 each, and the unit left over goes to the first.
  QuotaLedger l({gpuQueue("a", "lab", Quota::units(1)), gpuQueue("b", "lab", Quota::units(1)),
                 gpuQueue("c", "lab", Quota::units(1)), gpuQueue("d", "lab", Quota::units(0))});
  l.add(l.find("d"), gpus(1));
  EXPECT_EQ(l.lent(l.find("a"), "gpu"), 334);
  EXPECT_EQ(l.lent(l.find("b"), "gpu"), 333);
  EXPECT_EQ(l.lent(l.find("c"), "gpu"), 333);
  EXPECT_EQ(l.borrowed(l.find("d"), "gpu"), 1000);
}

TEST(QuotaLending, AQueueWithoutCohortLendsNothingEvenAboveNominal) {
  // Its quota was lowered below what it holds: above nominal, from no one.
  QuotaLedger l({gpuQueue("solo", "", Quota::units(2)), gpuQueue("other", "", Quota::units(8))});
  l.add(l.find("solo"), gpus(3));
  EXPECT_EQ(l.borrowed(l.find("solo"), "gpu"), 1000);
  EXPECT_EQ(l.lent(l.find("other"), "gpu"), 0);
}

TEST(JobQueue, SpecQueueWhenItExistsElseTheProjectsFirstQueue) {
  std::vector<QueueConfig> queues = {gpuQueue("vision", "", Quota::units(1)),
                                     gpuQueue("vision-batch", "", Quota::units(1)),
                                     gpuQueue("nlp", "", Quota::units(1))};
  queues[1].project = "vision";
  ASSERT_NE(jobQueue(queues, "vision-batch", "vision"), nullptr);
  EXPECT_EQ(jobQueue(queues, "vision-batch", "vision")->name, "vision-batch");
  EXPECT_EQ(jobQueue(queues, "", "vision")->name, "vision");
  // A queue that no longer exists: the project's first.
  EXPECT_EQ(jobQueue(queues, "gone", "vision")->name, "vision");
  // Another project's queue by name is still that queue.
  EXPECT_EQ(jobQueue(queues, "nlp", "vision")->name, "nlp");
  EXPECT_EQ(jobQueue(queues, "", "speech"), nullptr);
  EXPECT_EQ(jobQueue(queues, "gone", ""), nullptr);
  EXPECT_EQ(jobQueue({}, "", "vision"), nullptr);
}

TEST(OldestPending, PerQueueByTheSchedulersRule) {
  std::vector<QueueConfig> queues = {gpuQueue("vision", "", Quota::units(1)),
                                     gpuQueue("nlp", "", Quota::units(1))};
  auto job = [](JobState state, const std::string& project, const std::string& queue,
                Timestamp created) {
    Job j;
    j.state = state;
    j.spec.project = project;
    j.spec.queue = queue;
    j.created_at = created;
    return j;
  };
  std::vector<Job> jobs = {
      job(JobState::kPending, "vision", "", 300),
      job(JobState::kPending, "vision", "", 100),
      // Running jobs do not wait.
      job(JobState::kRunning, "vision", "", 50),
      // Charged to the queue the spec names.
      job(JobState::kPending, "vision", "nlp", 200),
      // No configured queue: counted under the queue the spec names, or not at all.
      job(JobState::kPending, "speech", "default", 400),
      job(JobState::kPending, "speech", "", 10),
  };
  std::map<std::string, Timestamp> want = {{"vision", 100}, {"nlp", 200}, {"default", 400}};
  EXPECT_EQ(oldestPendingByQueue(queues, jobs), want);
}

}  // namespace
}  // namespace ty
