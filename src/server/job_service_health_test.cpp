// GPU health set from outside the scheduler, events recorded for other
// components, and the reports each loop pass hands to on_pass.
#include <gtest/gtest.h>

#include <csignal>
#include <mutex>

#include "server/job_service_test_fixture.h"

namespace ty {
namespace {

using test::JobServiceTest;
using test::spec;

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST_F(JobServiceTest, AnUnhealthyGpuGetsNoNewJob) {
  ASSERT_TRUE(service_->setGpuHealth("local", 2, false, "Xid 79: fallen off the bus").isOk());
  auto j = submit(spec(3), "alice");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  waitState(j->id, JobState::kRunning);
  ASSERT_EQ(exec_.launches().size(), 1u);
  EXPECT_EQ(exec_.launches()[0].replicas[0].gpus, (std::vector<int>{0, 1, 3}));
}

TEST_F(JobServiceTest, AJobThatOnlyFitsOnAnUnhealthyGpuWaitsUntilItIsHealthyAgain) {
  ASSERT_TRUE(service_->setGpuHealth("local", 3, false, "Xid 79").isOk());
  auto j = submit(spec(4), "alice");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  Job waiting = waitJob(j->id, [](const Job& x) { return !x.reason.empty(); });
  EXPECT_EQ(waiting.state, JobState::kPending);
  EXPECT_EQ(waiting.reason,
            "Waiting: needs 4 GPUs, 3 free on node local; GPU 3 of node local is unhealthy "
            "(Xid 79) and takes no new jobs");
  ASSERT_TRUE(eventually([&] { return service_->waitInfo(j->id).has_value(); }));
  EXPECT_TRUE(contains(service_->waitInfo(j->id)->message, "unhealthy (Xid 79)"));

  ASSERT_TRUE(service_->setGpuHealth("local", 3, true, "").isOk());
  waitState(j->id, JobState::kRunning);
  EXPECT_EQ(exec_.launches()[0].replicas[0].gpus, (std::vector<int>{0, 1, 2, 3}));
}

TEST_F(JobServiceTest, AJobWaitingForOtherJobsDoesNotBlameHealth) {
  ASSERT_TRUE(service_->setGpuHealth("local", 3, false, "Xid 79").isOk());
  auto a = submit(spec(2, "a"), "alice");
  waitState(a->id, JobState::kRunning);
  // 1 healthy GPU free: with GPU 3 healthy there would still be only 2.
  auto b = submit(spec(3, "b"), "bob");
  Job waiting = waitJob(b->id, [](const Job& x) { return !x.reason.empty(); });
  EXPECT_EQ(waiting.reason, "Waiting: needs 3 GPUs, 1 free on node local");
}

TEST_F(JobServiceTest, AJobOnAGpuThatTurnsUnhealthyKeepsRunningAndIsTold) {
  auto j = submit(spec(1), "alice");
  waitState(j->id, JobState::kRunning);
  const int gpu = exec_.launches()[0].replicas[0].gpus[0];
  ASSERT_TRUE(service_->setGpuHealth("local", gpu, false, "ECC double-bit errors").isOk());
  ASSERT_TRUE(eventually([&] { return hasEvent(j->id, "GpuUnhealthy"); }));
  EXPECT_TRUE(hasEvent(j->id, "GpuUnhealthy: GPU " + std::to_string(gpu) +
                                  " of node local is unhealthy (ECC double-bit errors); the job "
                                  "keeps running on it, but no new job is placed there"));
  EXPECT_EQ(job(j->id).state, JobState::kRunning);
  EXPECT_TRUE(exec_.signals().empty());

  // Readers see it: the nodes view and the health list.
  ASSERT_TRUE(eventually([&] { return !service_->nodes()[0].gpus[gpu].gpu.healthy; }));
  const GpuView view = service_->nodes()[0].gpus[gpu];
  EXPECT_EQ(view.unhealthy_reason, "ECC double-bit errors");
  EXPECT_EQ(view.holders, (std::vector<JobId>{j->id}));
  std::vector<GpuHealthView> health = service_->gpuHealth();
  ASSERT_EQ(health.size(), 4u);
  for (const GpuHealthView& h : health) {
    EXPECT_EQ(h.healthy, h.gpu != gpu) << h.gpu;
    EXPECT_EQ(h.node, "local");
    EXPECT_EQ(h.uuid, "GPU-" + std::to_string(h.gpu));
  }
  EXPECT_EQ(health[gpu].reason, "ECC double-bit errors");
  EXPECT_EQ(health[gpu].since, clock_.now());
}

TEST_F(JobServiceTest, HealthOfAnUnknownGpuIsNotFound) {
  EXPECT_EQ(service_->setGpuHealth("local", 9, false, "x").code(), StatusCode::kNotFound);
  EXPECT_EQ(service_->setGpuHealth("other", 0, false, "x").code(), StatusCode::kNotFound);
}

TEST_F(JobServiceTest, HealthIsNotKeptAcrossARestart) {
  ASSERT_TRUE(service_->setGpuHealth("local", 0, false, "Xid 48").isOk());
  restart();
  for (const GpuHealthView& h : service_->gpuHealth()) EXPECT_TRUE(h.healthy) << h.gpu;
}

TEST_F(JobServiceTest, RecordedEventsAreStoredInOrderWithTheLoopsOwn) {
  auto j = submit(spec(1), "alice");
  waitState(j->id, JobState::kRunning);
  const std::int64_t last_seq = store_->events(j->id).value().back().seq;
  service_->recordEvents(
      {{0, JobId(424242), clock_.now(), EventLevel::kWarning, "GpuIdle",
        "a job the store does not have"},
       {0, j->id, clock_.now(), EventLevel::kWarning, "GpuIdle", "GPU 0 has been idle for 30m"}});
  ASSERT_TRUE(eventually([&] { return hasEvent(j->id, "GpuIdle: GPU 0 has been idle for 30m"); }));
  std::vector<Event> events = store_->events(j->id, last_seq).value();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_GT(events[0].seq, last_seq);
  EXPECT_EQ(events[0].level, EventLevel::kWarning);
  // The event of the unknown job was dropped, not the batch: the loop goes on.
  EXPECT_TRUE(service_->ready());
  exec_.finishAll({j->id, 1}, 0);
  waitState(j->id, JobState::kSucceeded);
}

// Collects the reports handed to on_pass (from the loop and from submit).
class PassReportTest : public JobServiceTest {
 protected:
  void SetUp() override {
    options_.on_pass = [this](const PassReport& r) {
      std::lock_guard lock(mu_);
      reports_.push_back(r);
    };
    JobServiceTest::SetUp();
  }
  // Every report so far, added up.
  PassReport total() {
    std::lock_guard lock(mu_);
    PassReport sum;
    int scheduled = 0;
    for (const PassReport& r : reports_) {
      if (r.scheduling_seconds) ++scheduled;
      for (const auto& [k, n] : r.decisions) sum.decisions[k] += n;
      for (const auto& [k, n] : r.preemptions) sum.preemptions[k] += n;
      for (const auto& [k, n] : r.failures) sum.failures[k] += n;
      for (const auto& op : r.store_operations) sum.store_operations.push_back(op);
    }
    if (scheduled > 0) sum.scheduling_seconds = scheduled;  // the count, not a time
    return sum;
  }
  int storeOperations(const std::string& operation) {
    int n = 0;
    for (const auto& [op, seconds] : total().store_operations) {
      if (op == operation && seconds >= 0) ++n;
    }
    return n;
  }

  std::mutex mu_;
  std::vector<PassReport> reports_;
};

TEST_F(PassReportTest, CountsStartsFailuresAndStoreWrites) {
  auto j = submit(spec(1), "alice");
  waitState(j->id, JobState::kRunning);
  EXPECT_EQ(storeOperations("create_jobs"), 1);
  ASSERT_TRUE(eventually([&] { return total().decisions["start"] == 1; }));
  EXPECT_TRUE(total().scheduling_seconds.has_value());
  EXPECT_GE(storeOperations("commit"), 2);  // the placement, then the start

  exec_.finishAll({j->id, 1}, 3);
  waitState(j->id, JobState::kFailed);
  ASSERT_TRUE(eventually([&] { return total().failures["exit_code"] == 1; }));

  exec_.failNextLaunch(Status::failedPrecondition("podman is not installed"));
  auto k = submit(spec(1), "alice");
  waitState(k->id, JobState::kFailed);
  ASSERT_TRUE(eventually([&] { return total().failures["launch"] == 1; }));

  auto l = submit(spec(1), "alice");
  waitState(l->id, JobState::kRunning);
  exec_.finish({l->id, 1}, 0, 137, SIGKILL);
  waitState(l->id, JobState::kFailed);
  ASSERT_TRUE(eventually([&] { return total().failures["signal"] == 1; }));
  EXPECT_EQ(total().failures.size(), 3u);
  EXPECT_TRUE(total().preemptions.empty());
}

TEST_F(PassReportTest, CountsPreemptionsByReason) {
  auto low = submit(spec(4, "low"), "alice");
  waitState(low->id, JobState::kRunning);
  JobSpec high = spec(4, "high");
  high.priority = 10;
  ASSERT_TRUE(submit(high, "bob").isOk());
  ASSERT_EQ(waitSignals(1).size(), 1u);
  ASSERT_TRUE(eventually([&] { return total().preemptions["priority"] == 1; }));
  EXPECT_EQ(total().decisions["preempt"], 1);
  EXPECT_EQ(total().preemptions.count("reclaim"), 0u);
}

TEST_F(PassReportTest, AFailedCommitReportsItsTimeButNoDecisions) {
  flaky_->fail_applies = 1;
  auto j = submit(spec(1), "alice");
  waitState(j->id, JobState::kRunning);
  // The failed write is timed; the placement it carried is counted once,
  // when it was made again after reading the store back.
  ASSERT_TRUE(eventually([&] { return total().decisions["start"] == 1; }));
  EXPECT_GE(storeOperations("commit"), 3);
}

}  // namespace
}  // namespace ty
