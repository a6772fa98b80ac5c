// The reconcile loop applying the scheduler's policy: queues and quotas,
// preemption with requeue, min_runtime protection, GPU shares and the
// fair-share usage that survives a restart.
#include <gtest/gtest.h>

#include "server/job_service_test_fixture.h"

namespace ty {
namespace {

using test::JobServiceTest;
using test::spec;

QueueConfig queue(const std::string& name, std::int64_t gpus, const std::string& cohort = "lab",
                  std::optional<std::int64_t> borrow = std::nullopt) {
  QueueConfig q;
  q.name = name;
  q.project = name;
  q.cohort = cohort;
  q.quotas["gpu"] = Quota::units(gpus, borrow);
  return q;
}

JobSpec in(JobSpec s, const std::string& project, int priority = 0) {
  s.project = project;
  s.priority = priority;
  return s;
}

class JobServicePolicyTest : public JobServiceTest {
 protected:
  void withQueues(std::vector<QueueConfig> queues) {
    options_.policy.queues = std::move(queues);
    restart();
  }
};

TEST_F(JobServicePolicyTest, AJobGoesToItsProjectsQueueAndUnknownQueuesAreRefused) {
  withQueues({queue("vision", 2), queue("nlp", 2)});
  auto j = submit(in(spec(1), "vision"), "alice");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  EXPECT_EQ(j->spec.queue, "vision");
  JobSpec s = spec(1);
  s.queue = "speech";
  EXPECT_EQ(submit(s, "alice").status().field(), "queue");
  EXPECT_EQ(submit(in(spec(1), "robotics"), "alice").status().field(), "project");
}

TEST_F(JobServicePolicyTest, AJobLargerThanItsQueueCanEverHoldIsRefusedAtSubmit) {
  withQueues({queue("vision", 2, "", 0)});
  auto r = submit(in(spec(4), "vision"), "alice");
  EXPECT_EQ(r.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(r.status().field(), "resources.gpus");
  EXPECT_TRUE(store_->listJobs({}).value().jobs.empty());
}

TEST_F(JobServicePolicyTest, AHigherPriorityJobPreemptsAndTheVictimIsRequeued) {
  auto low = submit(spec(4, "low"), "alice");
  waitState(low->id, JobState::kRunning);
  auto high = submit(in(spec(4, "high"), "default", 10), "bob");
  ASSERT_EQ(waitSignals(1).size(), 1u);
  EXPECT_EQ(exec_.signals()[0].key, (AttemptKey{low->id, 1}));
  EXPECT_EQ(exec_.signals()[0].sig, SIGTERM);
  Job stopping = job(low->id);
  EXPECT_EQ(stopping.preempted_by, high->id);
  EXPECT_TRUE(hasEvent(low->id, "Preempted: Preempted by job " + std::to_string(high->id.value())));
  EXPECT_EQ(job(high->id).state, JobState::kPending);  // waits for the victim to stop

  exec_.finishAll({low->id, 1}, 143);  // it checkpointed and exited on SIGTERM
  waitState(high->id, JobState::kRunning);
  Job requeued = waitState(low->id, JobState::kPending);
  EXPECT_EQ(requeued.preemptions, 1);
  EXPECT_EQ(requeued.preempted_by, JobId());
  EXPECT_TRUE(hasEvent(low->id, "Requeued: Stopped for job"));
  EXPECT_NE(store_->attempts(low->id).value()[0].reason.find("Preempted by job"),
            std::string::npos);

  exec_.finishAll({high->id, 1}, 0);
  waitState(low->id, JobState::kRunning);
  EXPECT_EQ(exec_.launches().back().key, (AttemptKey{low->id, 2}));
  exec_.finishAll({low->id, 2}, 0);
  EXPECT_EQ(waitState(low->id, JobState::kSucceeded).attempts, 2);
}

TEST_F(JobServicePolicyTest, TheVictimIsTheJobThatLosesTheLeastWork) {
  auto a = submit(spec(2, "a"), "alice");
  auto b = submit(spec(2, "b"), "alice");
  waitState(a->id, JobState::kRunning);
  waitState(b->id, JobState::kRunning);
  advance(3'600'000);
  exec_.setCheckpoint(b->id, clock_.now() - 60'000);  // b saved a minute ago, a never
  auto high = submit(in(spec(2, "high"), "default", 10), "bob");
  ASSERT_EQ(waitSignals(1).size(), 1u);
  EXPECT_EQ(exec_.signals()[0].key.job, b->id);
  EXPECT_EQ(job(b->id).preempted_by, high->id);
}

TEST_F(JobServicePolicyTest, PreemptionDoesNotUseUpRetries) {
  JobSpec s = spec(4, "low");
  s.retries = {0, 1000};
  auto low = submit(s, "alice");
  waitState(low->id, JobState::kRunning);
  auto high = submit(in(spec(4, "high"), "default", 5), "bob");
  waitSignals(1);
  exec_.finishAll({low->id, 1}, 143);
  waitState(high->id, JobState::kRunning);
  exec_.finishAll({high->id, 1}, 0);
  waitState(low->id, JobState::kRunning);
  exec_.finishAll({low->id, 2}, 1);  // a real failure now: no retries were asked for
  Job failed = waitState(low->id, JobState::kFailed);
  EXPECT_EQ(failed.reason, "Exited with code 1");
}

TEST_F(JobServicePolicyTest, AQueueReclaimsItsNominalQuotaFromABorrower) {
  withQueues({queue("vision", 2), queue("nlp", 2)});
  auto a = submit(in(spec(2, "a"), "vision"), "alice");
  auto b = submit(in(spec(2, "b"), "vision"), "alice");  // borrows nlp's idle quota
  waitState(a->id, JobState::kRunning);
  waitState(b->id, JobState::kRunning);
  auto c = submit(in(spec(2, "c"), "nlp"), "carol");
  ASSERT_EQ(waitSignals(1).size(), 1u);
  JobId victim = exec_.signals()[0].key.job;
  EXPECT_TRUE(victim == a->id || victim == b->id);
  EXPECT_EQ(job(victim).preempted_by, c->id);
  EXPECT_NE(job(victim).reason.find("reclaim"), std::string::npos) << job(victim).reason;
  exec_.finishAll({victim, 1}, 143);
  waitState(c->id, JobState::kRunning);
  Job back = waitState(victim, JobState::kPending);
  // Within quota again: vision waits for its own nominal share to free up.
  EXPECT_EQ(exec_.signals().size(), 1u);
  EXPECT_EQ(back.state, JobState::kPending);
}

TEST_F(JobServicePolicyTest, MinRuntimeProtectsAYoungJobUntilItEnds) {
  JobSpec s = spec(4, "young");
  s.min_runtime = 600'000;
  auto young = submit(s, "alice");
  waitState(young->id, JobState::kRunning);
  auto high = submit(in(spec(4, "high"), "default", 10), "bob");
  waitJob(high->id, [](const Job& j) { return !j.reason.empty(); });
  EXPECT_TRUE(exec_.signals().empty());
  advance(599'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_TRUE(exec_.signals().empty());
  advance(1'000);  // protection over: the loop wakes on its own for it
  ASSERT_EQ(waitSignals(1).size(), 1u);
  EXPECT_EQ(exec_.signals()[0].key.job, young->id);
}

TEST_F(JobServicePolicyTest, AStopForPreemptionSurvivesARestart) {
  auto low = submit(spec(4, "low"), "alice");
  waitState(low->id, JobState::kRunning);
  auto high = submit(in(spec(4, "high"), "default", 10), "bob");
  waitSignals(1);
  restart();  // the victim is still stopping
  exec_.finishAll({low->id, 1}, 143);
  waitState(high->id, JobState::kRunning);
  Job back = waitState(low->id, JobState::kPending);
  EXPECT_EQ(back.preemptions, 1);
  EXPECT_TRUE(hasEvent(low->id, "Requeued"));
}

TEST_F(JobServicePolicyTest, SharesOfAGpuArePackedOntoOneGpu) {
  JobSpec half = spec(0, "half");
  half.resources.gpus = Quantity::fromMilli(500);
  auto a = submit(half, "alice");
  auto b = submit(half, "bob");
  waitState(a->id, JobState::kRunning);
  waitState(b->id, JobState::kRunning);
  auto launches = exec_.launches();
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].replicas[0].gpus, launches[1].replicas[0].gpus);
  EXPECT_EQ(launches[0].replicas[0].gpu_milli, 500);
  std::vector<NodeView> nodes;
  eventually([&] {
    nodes = service_->nodes();
    int g = launches[0].replicas[0].gpus[0];
    return !nodes.empty() && nodes[0].gpus[static_cast<size_t>(g)].used_milli == 1000;
  });
  int g = launches[0].replicas[0].gpus[0];
  EXPECT_EQ(nodes[0].gpus[static_cast<size_t>(g)].holders.size(), 2u);
  // Three whole GPUs are still free.
  auto whole = submit(spec(3, "three"), "carol");
  waitState(whole->id, JobState::kRunning);
}

TEST_F(JobServicePolicyTest, FairShareUsageIsChargedAndKeptAcrossRestarts) {
  withQueues({queue("vision", 2), queue("nlp", 2)});
  auto a = submit(in(spec(2, "a"), "vision"), "alice");
  waitState(a->id, JobState::kRunning);
  advance(3'600'000);  // two GPUs for an hour
  exec_.finishAll({a->id, 1}, 0);
  waitState(a->id, JobState::kSucceeded);
  double gpu_ms = 0;
  eventually([&] {
    std::vector<QueueUsage> usage = store_->queueUsage().value();
    for (const auto& u : usage) {
      if (u.queue == "vision") gpu_ms = u.gpu_ms;
    }
    return gpu_ms > 0;
  });
  // 2 GPU-hours, a little less after a week-long half-life's decay.
  EXPECT_NEAR(gpu_ms / 3.6e6, 2.0, 0.02);
  restart();
  std::vector<QueueView> queues = service_->queues();
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0].name, "vision");
  EXPECT_NEAR(queues[0].usage_gpu_hours, 2.0, 0.02);
  EXPECT_EQ(queues[1].usage_gpu_hours, 0);
}

TEST_F(JobServicePolicyTest, QueuesShowQuotaAndUse) {
  withQueues({queue("vision", 2), queue("nlp", 2)});
  auto a = submit(in(spec(3, "a"), "vision"), "alice");
  waitState(a->id, JobState::kRunning);
  auto b = submit(in(spec(4, "b"), "nlp"), "bob");
  waitJob(b->id, [](const Job& j) { return !j.reason.empty(); });
  std::vector<QueueView> queues;
  eventually([&] {
    queues = service_->queues();
    return queues.size() == 2 && queues[1].pending == 1;
  });
  ASSERT_EQ(queues.size(), 2u);
  EXPECT_EQ(queues[0].running, 1);
  ASSERT_EQ(queues[0].resources.size(), 1u);
  EXPECT_EQ(queues[0].resources[0].name, "gpu");
  EXPECT_EQ(queues[0].resources[0].nominal, 2000);
  EXPECT_EQ(queues[0].resources[0].used, 3000);
  EXPECT_EQ(queues[1].pending, 1);
  auto w = service_->waitInfo(b->id);
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->queue, "nlp");
  EXPECT_EQ(w->position, 1);
}

}  // namespace
}  // namespace ty
