// Service levels in the reconcile loop: priorities refined by attained
// service or remaining estimate (core/service_levels.h), with the service
// of earlier attempts rebuilt from the store after a restart.
#include <gtest/gtest.h>

#include "server/job_service_test_fixture.h"

namespace ty {
namespace {

using test::JobServiceTest;
using test::spec;

constexpr DurationMs kHour = 3'600'000;

class JobServiceLevelsTest : public JobServiceTest {
 protected:
  void withLevels(ServiceLevels kind) {
    options_.levels.kind = kind;
    options_.levels.las_threshold_gpu_ms = kHour;  // one GPU-hour
    restart();
  }
};

TEST_F(JobServiceLevelsTest, AJobPastTheThresholdMakesWayAndStaysDemotedAfterARestart) {
  withLevels(ServiceLevels::kLeastAttained);
  auto old = submit(spec(4, "old"), "alice");
  waitState(old->id, JobState::kRunning);
  advance(kHour);  // 4 GPU-hours: demoted
  auto fresh = submit(spec(4, "fresh"), "bob");
  ASSERT_EQ(waitSignals(1).size(), 1u);
  EXPECT_EQ(exec_.signals()[0].key, (AttemptKey{old->id, 1}));
  exec_.finishAll({old->id, 1}, 143);
  waitState(fresh->id, JobState::kRunning);
  waitState(old->id, JobState::kPending);

  // The old job's hour is read back from its stored attempt: a job
  // submitted after it still goes first.
  restart();
  auto later = submit(spec(4, "later"), "carol");
  exec_.finishAll({fresh->id, 1}, 0);
  waitState(later->id, JobState::kRunning);
  EXPECT_EQ(job(old->id).state, JobState::kPending);
  exec_.finishAll({later->id, 1}, 0);
  waitState(old->id, JobState::kRunning);
}

TEST_F(JobServiceLevelsTest, AShortJobPreemptsALongOneButNotTheOtherWayRound) {
  withLevels(ServiceLevels::kShortestRemaining);
  JobSpec long_spec = spec(4, "long");
  long_spec.max_runtime = 10 * kHour;
  auto long_job = submit(long_spec, "alice");
  waitState(long_job->id, JobState::kRunning);

  JobSpec short_spec = spec(4, "short");
  short_spec.max_runtime = kHour / 6;
  auto short_job = submit(short_spec, "bob");
  ASSERT_EQ(waitSignals(1).size(), 1u);
  EXPECT_EQ(exec_.signals()[0].key, (AttemptKey{long_job->id, 1}));
  exec_.finishAll({long_job->id, 1}, 143);
  waitState(short_job->id, JobState::kRunning);

  // The requeued long job does not preempt the short one back...
  // Nor does a new long one: once a pass has explained why it waits, no
  // further stop was sent.
  auto other_long = submit(long_spec, "carol");
  ASSERT_TRUE(eventually([&] { return service_->waitInfo(other_long->id).has_value(); }));
  EXPECT_EQ(exec_.signals().size(), 1u);
  EXPECT_EQ(job(other_long->id).state, JobState::kPending);
}

}  // namespace
}  // namespace ty
