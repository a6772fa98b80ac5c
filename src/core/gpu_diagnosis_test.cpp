#include "core/gpu_diagnosis.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

constexpr DurationMs kMinute = 60'000;
constexpr std::int64_t kMib = std::int64_t{1} << 20;
// 2026-11-30 10:02:00 UTC.
constexpr Timestamp kStart = 1796032920000;

GpuObservation gpu(int index, double util) {
  GpuObservation g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.util_percent = util;
  g.ecc_double_bit = 0;
  g.processes = std::vector<GpuProcessObservation>{};
  return g;
}

JobObservation job(std::int64_t id, std::vector<int> gpus,
                   std::optional<double> cpu = std::nullopt) {
  return JobObservation{JobId(id), "vision", "ada", std::move(gpus), cpu};
}

// One round per minute from kStart; `rounds` calls with the same input.
struct Rounds {
  DiagnosisConfig config;
  DiagnosisState state;
  Timestamp now = kStart;

  DiagnosisOutput run(DiagnosisInput in) {
    in.now = now;
    now += kMinute;
    return diagnoseGpus(in, config, state);
  }
  // All events of `n` rounds of `in`.
  std::vector<Event> runFor(int n, const DiagnosisInput& in, DiagnosisOutput* last = nullptr) {
    std::vector<Event> events;
    for (int i = 0; i < n; ++i) {
      DiagnosisOutput out = run(in);
      events.insert(events.end(), out.events.begin(), out.events.end());
      if (last != nullptr) *last = std::move(out);
    }
    return events;
  }
};

std::vector<Event> withReason(const std::vector<Event>& events, const std::string& reason) {
  std::vector<Event> out;
  for (const Event& e : events) {
    if (e.reason == reason) out.push_back(e);
  }
  return out;
}

TEST(GpuDiagnosisTest, IdleJobGetsOneWarningAfterIdleAfterWithItsAverage) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 1), gpu(1, 1)};
  in.jobs = {job(12, {0, 1})};
  // Rounds at 0..30 minutes: the 31st round (30 minutes idle) reports.
  DiagnosisOutput last;
  std::vector<Event> events = r.runFor(30, in, &last);
  EXPECT_TRUE(withReason(events, kEventGpuIdle).empty());
  ASSERT_EQ(last.idle_seconds.size(), 1u);
  EXPECT_EQ(last.idle_seconds[0].seconds, 29 * 60);
  EXPECT_EQ(last.idle_seconds[0].project, "vision");

  events = r.runFor(2, in, &last);
  std::vector<Event> idle = withReason(events, kEventGpuIdle);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].job, JobId(12));
  EXPECT_EQ(idle[0].level, EventLevel::kWarning);
  EXPECT_EQ(idle[0].message,
            "GPU idle for 30m: its 2 GPUs averaged 1% utilisation since 10:02 UTC; if the job "
            "is stuck, cancel it (trainyard cancel 12)");
  EXPECT_EQ(last.idle_seconds[0].seconds, 31 * 60);
  EXPECT_TRUE(last.stops.empty());  // idle_stop_after is off by default
}

TEST(GpuDiagnosisTest, OneBusyGpuMeansTheJobIsNotIdle) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 0), gpu(1, 80)};
  in.jobs = {job(12, {0, 1})};
  DiagnosisOutput last;
  EXPECT_TRUE(withReason(r.runFor(40, in, &last), kEventGpuIdle).empty());
  EXPECT_EQ(last.idle_seconds[0].seconds, 0);
}

TEST(GpuDiagnosisTest, BusyRoundStartsANewIdleSpell) {
  Rounds r;
  r.config.idle_after = 10 * kMinute;
  DiagnosisInput idle;
  idle.gpus = {gpu(0, 0)};
  idle.jobs = {job(3, {0})};
  DiagnosisInput busy = idle;
  busy.gpus[0].util_percent = 90;
  EXPECT_EQ(withReason(r.runFor(12, idle), kEventGpuIdle).size(), 1u);
  r.runFor(1, busy);
  EXPECT_TRUE(withReason(r.runFor(10, idle), kEventGpuIdle).empty());
  std::vector<Event> again = withReason(r.runFor(1, idle), kEventGpuIdle);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_NE(again[0].message.find("its GPU averaged 0%"), std::string::npos) << again[0].message;
}

TEST(GpuDiagnosisTest, UnreadableUtilisationIsNotIdle) {
  Rounds r;
  r.config.idle_after = kMinute;
  DiagnosisInput in;
  in.gpus = {gpu(0, 0)};
  in.gpus[0].util_percent.reset();
  in.jobs = {job(3, {0})};
  EXPECT_TRUE(r.runFor(5, in).empty());
}

TEST(GpuDiagnosisTest, IdleStopAfterStopsTheJobSayingWhy) {
  Rounds r;
  r.config.idle_after = 10 * kMinute;
  r.config.idle_stop_after = 5 * kMinute;
  DiagnosisInput in;
  in.gpus = {gpu(0, 2)};
  in.jobs = {job(7, {0})};
  DiagnosisOutput last;
  r.runFor(15, in, &last);  // warned at 10m, 4 minutes ago
  EXPECT_TRUE(last.stops.empty());
  r.runFor(1, in, &last);
  ASSERT_EQ(last.stops.size(), 1u);
  EXPECT_EQ(last.stops[0].job, JobId(7));
  ASSERT_EQ(withReason(last.events, kEventIdleStop).size(), 1u);
  EXPECT_EQ(last.events[0].message, last.stops[0].why);
  EXPECT_NE(last.stops[0].why.find("under 5% utilisation for 15m"), std::string::npos)
      << last.stops[0].why;
  r.runFor(1, in, &last);
  EXPECT_TRUE(last.stops.empty());  // asked once
}

TEST(GpuDiagnosisTest, InputBoundOncePerEpisode) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 30)};
  in.jobs = {job(5, {0}, 1.0)};
  // The window (5m) is covered from the 6th round on.
  EXPECT_TRUE(withReason(r.runFor(5, in), kEventInputBound).empty());
  std::vector<Event> events = withReason(r.runFor(10, in), kEventInputBound);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].message,
            "GPU idle 70% of the time over the last 5m while the job's CPU is at 100%: likely "
            "data loading; raise data loader workers or stage the dataset on local disk");

  // The GPUs get busy: the episode ends, and a new one is reported again.
  DiagnosisInput busy = in;
  busy.gpus[0].util_percent = 95;
  r.runFor(10, busy);
  EXPECT_EQ(withReason(r.runFor(10, in), kEventInputBound).size(), 1u);
}

TEST(GpuDiagnosisTest, LowUtilisationWithIdleCpuIsNotInputBound) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 30)};
  in.jobs = {job(5, {0}, 0.5)};
  EXPECT_TRUE(withReason(r.runFor(20, in), kEventInputBound).empty());
  in.jobs[0].cpu_fraction.reset();  // unknown CPU: no verdict either
  EXPECT_TRUE(withReason(r.runFor(20, in), kEventInputBound).empty());
}

TEST(GpuDiagnosisTest, LeftoverOfAnEndedJobIsAGhostUntilItExits) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 0), gpu(1, 0)};
  in.gpus[1].processes = std::vector<GpuProcessObservation>{{4321, 1024 * kMib}};
  in.pid_owners[4321] = PidOwner{JobId(9), false};

  // The first round gives it an interval to exit.
  DiagnosisOutput out = r.run(in);
  EXPECT_TRUE(out.health.empty());
  EXPECT_EQ(out.ghost_processes[1], 0);

  out = r.run(in);
  EXPECT_EQ(out.ghost_processes[1], 1);
  EXPECT_EQ(out.ghost_processes[0], 0);
  ASSERT_EQ(out.health.size(), 1u);
  EXPECT_EQ(out.health[0], (GpuHealthChange{1, false, "ghost process 4321 holds 1024 MiB"}));
  EXPECT_EQ(out.unhealthy[1], "ghost process 4321 holds 1024 MiB");
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].job, JobId(9));
  EXPECT_EQ(out.events[0].reason, kEventGhostProcess);
  EXPECT_NE(out.events[0].message.find("process 4321 of this job still holds 1024 MiB on GPU 1"),
            std::string::npos)
      << out.events[0].message;
  EXPECT_TRUE(out.kills.empty());  // kill_ghosts is off by default

  out = r.run(in);  // reported once
  EXPECT_TRUE(out.events.empty());
  EXPECT_TRUE(out.health.empty());

  in.gpus[1].processes->clear();
  out = r.run(in);
  EXPECT_EQ(out.ghost_processes[1], 0);
  ASSERT_EQ(out.health.size(), 1u);
  EXPECT_EQ(out.health[0], (GpuHealthChange{1, true, ""}));
  EXPECT_TRUE(out.unhealthy.empty());
}

TEST(GpuDiagnosisTest, ProcessOfARunningJobIsNoGhost) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 90)};
  in.gpus[0].processes = std::vector<GpuProcessObservation>{{100, 2048 * kMib}};
  in.jobs = {job(1, {0})};
  in.pid_owners[100] = PidOwner{JobId(1), true};
  DiagnosisOutput out;
  r.runFor(3, in, &out);
  EXPECT_EQ(out.ghost_processes[0], 0);
  EXPECT_TRUE(out.unhealthy.empty());
}

TEST(GpuDiagnosisTest, KillGhostsKillsOnlyLeftoversOfOurJobs) {
  Rounds r;
  r.config.kill_ghosts = true;
  DiagnosisInput in;
  in.gpus = {gpu(0, 0)};
  in.gpus[0].processes = std::vector<GpuProcessObservation>{{500, 10 * kMib}, {600, std::nullopt}};
  in.pid_owners[500] = PidOwner{JobId(4), false};  // 600 is foreign
  r.run(in);
  DiagnosisOutput out = r.run(in);
  ASSERT_EQ(out.kills.size(), 1u);
  EXPECT_EQ(out.kills[0], (ProcessKill{500, JobId(4)}));
  EXPECT_EQ(out.ghost_processes[0], 2);
  EXPECT_EQ(out.unhealthy[0], "ghost process 500 holds 10 MiB (and 1 more)");
  ASSERT_EQ(out.events.size(), 1u);  // none for the foreign process: it has no job
  EXPECT_NE(out.events[0].message.find("killing it"), std::string::npos);
  out = r.run(in);
  EXPECT_TRUE(out.kills.empty());  // killed once
}

TEST(GpuDiagnosisTest, EccRiseMarksTheGpuUnhealthyAndTellsItsJobs) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 90), gpu(1, 90)};
  in.jobs = {job(2, {1}), job(3, {0})};
  DiagnosisOutput out = r.run(in);
  EXPECT_TRUE(out.health.empty());

  in.gpus[1].ecc_double_bit = 2;
  out = r.run(in);
  ASSERT_EQ(out.health.size(), 1u);
  EXPECT_EQ(out.health[0], (GpuHealthChange{1, false, "ECC double-bit errors rose from 0 to 2"}));
  ASSERT_EQ(out.events.size(), 1u);
  EXPECT_EQ(out.events[0].job, JobId(2));
  EXPECT_EQ(out.events[0].reason, kEventGpuUnhealthy);
  EXPECT_NE(out.events[0].message.find("GPU 1 (GPU-1) of this job is unhealthy: ECC double-bit "
                                       "errors rose from 0 to 2"),
            std::string::npos)
      << out.events[0].message;

  out = r.run(in);  // still 2: stays unhealthy, nothing new
  EXPECT_TRUE(out.health.empty());
  EXPECT_TRUE(out.events.empty());
  EXPECT_EQ(out.unhealthy[1], "ECC double-bit errors rose from 0 to 2");

  in.gpus[1].ecc_double_bit = 0;  // the GPU was reset
  out = r.run(in);
  ASSERT_EQ(out.health.size(), 1u);
  EXPECT_TRUE(out.health[0].healthy);
}

TEST(GpuDiagnosisTest, NonZeroCountAtTheFirstSampleHasRisenSinceTheDriverLoaded) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 0)};
  in.gpus[0].ecc_double_bit = 3;
  DiagnosisOutput out = r.run(in);
  ASSERT_EQ(out.health.size(), 1u);
  EXPECT_EQ(out.health[0].reason, "ECC double-bit errors rose from 0 to 3");
}

TEST(GpuDiagnosisTest, HardwareXidMarksTheGpuUnhealthyApplicationXidDoesNot) {
  Rounds r;
  DiagnosisInput in;
  in.gpus = {gpu(0, 0)};
  in.gpus[0].xids = {13};
  EXPECT_TRUE(r.run(in).health.empty());
  in.gpus[0].xids = {79};
  DiagnosisOutput out = r.run(in);
  ASSERT_EQ(out.health.size(), 1u);
  EXPECT_EQ(out.health[0].reason, "XID 79: GPU has fallen off the bus");
  in.gpus[0].xids.clear();
  out = r.run(in);  // an XID fault stays
  EXPECT_EQ(out.unhealthy[0], "XID 79: GPU has fallen off the bus");
}

TEST(GpuDiagnosisTest, ValidatesItsConfigNamingTheKey) {
  DiagnosisConfig c;
  EXPECT_TRUE(validateDiagnosisConfig(c).isOk());
  c.idle_util_percent = 0;
  EXPECT_EQ(validateDiagnosisConfig(c).field(), "gpu_monitor.idle_util_percent");
  c = {};
  c.input_bound_util_percent = 120;
  EXPECT_EQ(validateDiagnosisConfig(c).field(), "gpu_monitor.input_bound_util_percent");
  c = {};
  c.idle_after = 0;
  EXPECT_EQ(validateDiagnosisConfig(c).field(), "gpu_monitor.idle_after");
  c = {};
  c.idle_stop_after = -1;
  EXPECT_EQ(validateDiagnosisConfig(c).field(), "gpu_monitor.idle_stop_after");
}

}  // namespace
}  // namespace ty
