#include "core/service_levels.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

constexpr std::int64_t kGpuHour = 3'600'000;  // GPU-ms
constexpr DurationMs kHour = 3'600'000;

NodeInfo node(const std::string& name, int gpus) {
  NodeInfo n;
  n.name = name;
  n.cpus = Quantity::whole(64);
  n.memory_bytes = 512LL << 30;
  for (int i = 0; i < gpus; ++i) n.gpus.push_back({i, "GPU-" + name + std::to_string(i), "A100"});
  return n;
}

PendingJob pending(std::int64_t id, int gpus, DurationMs max_runtime, int priority = 0) {
  PendingJob p{JobId(id), priority, id, {}, 1};
  p.per_replica.gpus = Quantity::whole(gpus);
  p.max_runtime = max_runtime;
  return p;
}

RunningJob running(std::int64_t id, int gpus, Timestamp started_at, DurationMs max_runtime) {
  RunningJob r;
  r.id = JobId(id);
  r.per_replica.gpus = Quantity::whole(gpus);
  std::vector<int> all;
  for (int g = 0; g < gpus; ++g) all.push_back(g);
  r.replicas = {{"n", all, 1000}};
  r.started_at = started_at;
  r.max_runtime = max_runtime;
  return r;
}

TEST(ServiceLevels, ShortestRemainingIsTheDefault) {
  EXPECT_EQ(ServiceLevelConfig{}.kind, ServiceLevels::kShortestRemaining);
}

TEST(ServiceLevels, NamesRoundTrip) {
  for (ServiceLevels s :
       {ServiceLevels::kNone, ServiceLevels::kLeastAttained, ServiceLevels::kShortestRemaining}) {
    EXPECT_EQ(parseServiceLevels(serviceLevelsName(s)), s);
  }
  EXPECT_FALSE(parseServiceLevels("srtf"));
}

TEST(ServiceLevels, NoneLeavesPrioritiesAlone) {
  QueueSnapshot q;
  q.pending = {pending(1, 1, kHour, 3)};
  q.running = {running(2, 1, 0, kHour)};
  q.running[0].priority = -2;
  applyServiceLevels(q, ServiceLevelConfig{ServiceLevels::kNone}, 10 * kHour);
  EXPECT_EQ(q.pending[0].priority, 3);
  EXPECT_EQ(q.running[0].priority, -2);
}

TEST(ServiceLevels, LeastAttainedDemotesPastTheThreshold) {
  ServiceLevelConfig c{ServiceLevels::kLeastAttained, kGpuHour};
  EXPECT_EQ(serviceLevel(c, kGpuHour - 1, 0), 1);
  EXPECT_EQ(serviceLevel(c, kGpuHour, 0), 0);
  QueueSnapshot q;
  q.pending = {pending(1, 1, 0)};
  q.pending[0].attained_service = 2 * kGpuHour;  // earlier runs count
  // 2 GPUs for 20 minutes: 40 GPU-minutes, still high; at 40 minutes, low.
  q.running = {running(2, 2, 0, 0), running(3, 2, 0, 0)};
  q.running[1].attained_service = kGpuHour / 3;  // plus an earlier run of 20 GPU-min
  applyServiceLevels(q, c, kHour / 3);
  EXPECT_EQ(q.pending[0].priority, 0);
  EXPECT_EQ(q.running[0].priority, 1);
  EXPECT_EQ(q.running[1].priority, 0);
}

TEST(ServiceLevels, ShortestRemainingRanksByGpuTimeLeft) {
  ServiceLevelConfig c{ServiceLevels::kShortestRemaining};
  // One level per doubling of GPU-seconds: 1 GPU-hour (3,600 GPU-s) is
  // above 2 GPU-hours, which ties with 2.1 (both in 4,096..8,191); no
  // estimate is the lowest level.
  const int one = serviceLevel(c, 0, kGpuHour);
  EXPECT_EQ(serviceLevel(c, 0, 2 * kGpuHour), one - 1);
  EXPECT_EQ(serviceLevel(c, 0, 2 * kGpuHour + kGpuHour / 10), one - 1);
  EXPECT_EQ(serviceLevel(c, 0, 0), 0);
  EXPECT_GT(serviceLevel(c, 0, 1), serviceLevel(c, 0, 100LL * 365 * 24 * kGpuHour));
  EXPECT_GT(serviceLevel(c, 0, 100LL * 365 * 24 * kGpuHour), 0);

  // A user's priority outranks any level.
  QueueSnapshot q;
  q.pending = {pending(1, 8, 100 * kHour, 1), pending(2, 1, kHour / 60)};
  applyServiceLevels(q, c, 0);
  EXPECT_GT(q.pending[0].priority, q.pending[1].priority);
}

TEST(ServiceLevels, ARunningJobClimbsAsItNearsItsEnd) {
  ServiceLevelConfig c{ServiceLevels::kShortestRemaining};
  QueueSnapshot early, late;
  early.running = late.running = {running(1, 1, 0, 8 * kHour)};
  applyServiceLevels(early, c, kHour);
  applyServiceLevels(late, c, 7 * kHour);
  EXPECT_GT(late.running[0].priority, early.running[0].priority);
  // Past its own estimate it claims almost nothing left: top level.
  QueueSnapshot over;
  over.running = {running(1, 1, 0, kHour)};
  applyServiceLevels(over, c, 2 * kHour);
  EXPECT_EQ(over.running[0].priority, kServiceLevelsPerPriority - 1);
}

TEST(ServiceLevels, AShortNewcomerPreemptsALongRunnerButNotAnEqual) {
  ServiceLevelConfig c{ServiceLevels::kShortestRemaining};
  ClusterSnapshot cluster{{{node("n", 8), {}, {}, 0}}};
  for (int g = 0; g < 8; ++g) cluster.nodes[0].gpu_used_milli[g] = 1000;
  PolicyConfig policy;
  Rng rng(1);

  // 8 GPUs for 10 hours left against 1 GPU for 30 minutes: preempted.
  QueueSnapshot q;
  q.running = {running(1, 8, 0, 11 * kHour)};
  q.pending = {pending(2, 1, kHour / 2)};
  applyServiceLevels(q, c, kHour);
  Decision d = schedule(cluster, q, policy, kHour, rng);
  ASSERT_EQ(d.preemptions.size(), 1u);
  EXPECT_EQ(d.preemptions[0].victim, JobId(1));
  EXPECT_EQ(d.preemptions[0].message, "Preempted by job 2 (higher service level " +
                                          std::to_string(q.pending[0].service_level) + " > " +
                                          std::to_string(q.running[0].service_level) + ")");

  // A newcomer needing as much as the runner has left waits instead of
  // swapping with it.
  QueueSnapshot same;
  same.running = {running(1, 8, 0, 11 * kHour)};
  same.pending = {pending(2, 8, 10 * kHour)};
  applyServiceLevels(same, c, kHour);
  d = schedule(cluster, same, policy, kHour, rng);
  EXPECT_TRUE(d.preemptions.empty());
  ASSERT_EQ(d.waiting.size(), 1u);
}

TEST(ServiceLevels, MessagesSpeakOfTheUsersPriority) {
  ServiceLevelConfig c{ServiceLevels::kShortestRemaining};
  QueueSnapshot q;
  q.pending = {pending(1, 1, kHour, 10), pending(2, 1, 0, 0)};
  applyServiceLevels(q, c, 0);
  const PendingJob &a = q.pending[0], &b = q.pending[1];
  EXPECT_EQ(precedenceReason(a.priority, a.service_level, b.priority, b.service_level),
            "higher priority 10 > 0");
  EXPECT_EQ(precedenceReason(10, -1, 0, -1), "higher priority 10 > 0");
}

TEST(ServiceLevels, AttainedServiceCountsEndedAttemptsOnly) {
  JobSpec spec;
  spec.resources.gpus = Quantity::fromMilli(500);
  spec.replicas = 2;
  Attempt ended;
  ended.state = AttemptState::kEnded;
  ended.started_at = 1000;
  ended.finished_at = 1000 + kHour;
  Attempt never_started = ended;
  never_started.started_at = 0;
  Attempt live;
  live.state = AttemptState::kRunning;
  live.started_at = 5000;
  // Two replicas of half a GPU for an hour: one GPU-hour.
  EXPECT_EQ(attainedService(spec, {ended, never_started, live}), kGpuHour);
}

}  // namespace
}  // namespace ty
