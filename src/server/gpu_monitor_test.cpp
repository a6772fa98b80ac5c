#include "server/gpu_monitor.h"

#include <gtest/gtest.h>

#include <memory>
#include <utility>

namespace ty {
namespace {

constexpr std::int64_t kMib = std::int64_t{1} << 20;
constexpr DurationMs kInterval = 60'000;

// What the scripted GPUs show; tests change it between rounds.
struct Script {
  std::vector<unsigned> util = {0, 0};
  std::vector<std::uint64_t> ecc_dbe = {0, 0};
  std::vector<std::vector<GpuProcessSample>> processes = {{}, {}};
  // Answered once, as NVML's events are.
  std::vector<std::vector<std::uint64_t>> xids = {{}, {}};
};

class ScriptedReader final : public GpuReader {
 public:
  explicit ScriptedReader(std::shared_ptr<Script> script) : script_(std::move(script)) {}
  Result<unsigned> gpuCount() override { return static_cast<unsigned>(script_->util.size()); }
  Result<GpuIdentity> identity(unsigned gpu) override {
    return GpuIdentity{"GPU-" + std::to_string(gpu), "NVIDIA A100-SXM4-80GB"};
  }
  Result<GpuUtilization> utilization(unsigned gpu) override {
    return GpuUtilization{script_->util[gpu], 0};
  }
  Result<GpuMemoryUse> memory(unsigned) override { return GpuMemoryUse{0, 80LL << 30}; }
  Result<unsigned> temperatureCelsius(unsigned) override { return unsupported(); }
  Result<unsigned> powerMilliwatts(unsigned) override { return unsupported(); }
  Result<unsigned> smClockMhz(unsigned) override { return unsupported(); }
  Result<std::uint64_t> eccErrors(unsigned gpu, EccErrorKind kind) override {
    if (kind == EccErrorKind::kSingleBit) return std::uint64_t{0};
    return script_->ecc_dbe[gpu];
  }
  Result<std::uint64_t> throttleReasons(unsigned) override { return std::uint64_t{0}; }
  Result<std::vector<GpuProcessSample>> computeProcesses(unsigned gpu) override {
    return script_->processes[gpu];
  }
  Result<std::vector<std::uint64_t>> xids(unsigned gpu) override {
    return std::exchange(script_->xids[gpu], {});
  }

 private:
  static Status unsupported() { return Status::failedPrecondition("not supported"); }
  std::shared_ptr<Script> script_;
};

Job makeJob(std::int64_t id, JobState state = JobState::kRunning) {
  Job j;
  j.id = JobId(id);
  j.spec.project = "vision";
  j.user = "ada";
  j.state = state;
  j.attempts = 1;
  j.spec.resources.cpus = Quantity::fromMilli(2000);
  return j;
}

class GpuMonitorTest : public ::testing::Test {
 protected:
  GpuMonitorTest() : clock_(1'796'032'920'000) {
    node_.info.name = "gpu-node-01";
    for (int i = 0; i < 2; ++i) {
      GpuView g;
      g.gpu.index = i;
      g.gpu.uuid = "GPU-" + std::to_string(i);
      node_.gpus.push_back(g);
    }
  }

  std::unique_ptr<GpuMonitor> make(DiagnosisConfig config = {}) {
    GpuMonitorOptions options;
    options.node = "gpu-node-01";
    options.interval = kInterval;
    options.diagnosis = config;
    options.node_cpus = 8;
    GpuMonitorActions actions;
    actions.record_events = [this](std::vector<Event> events) {
      events_.insert(events_.end(), events.begin(), events.end());
    };
    actions.set_gpu_health = [this](const std::string& node, int gpu, bool healthy,
                                    const std::string& reason) {
      health_.push_back(node + " " + std::to_string(gpu) + " " + (healthy ? "healthy" : reason));
    };
    actions.stop_job = [this](JobId id, const std::string&) { stopped_.push_back(id); };
    actions.kill_process = [this](std::int64_t pid, JobId) { killed_.push_back(pid); };
    return std::make_unique<GpuMonitor>(
        std::make_unique<ScriptedReader>(script_), [this] { return std::vector<NodeView>{node_}; },
        [this](JobId id) -> std::optional<Job> {
          auto it = jobs_.find(id);
          if (it == jobs_.end()) return std::nullopt;
          return it->second;
        },
        [this] { return procs_; }, clock_, options, actions);
  }

  // `n` rounds, one interval apart.
  void rounds(GpuMonitor& m, int n) {
    for (int i = 0; i < n; ++i) {
      m.round();
      clock_.advance(kInterval);
    }
  }

  void hold(int gpu, std::int64_t job) {
    node_.gpus[gpu].holders = {JobId(job)};
    jobs_[JobId(job)] = makeJob(job);
  }

  ManualClock clock_;
  std::shared_ptr<Script> script_ = std::make_shared<Script>();
  NodeView node_;
  std::map<JobId, Job> jobs_;
  ProcJobs procs_;
  std::vector<Event> events_;
  std::vector<std::string> health_;
  std::vector<JobId> stopped_;
  std::vector<std::int64_t> killed_;
};

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

TEST_F(GpuMonitorTest, ExportsDcgmSeriesWithTheHoldersLabels) {
  hold(0, 12);
  script_->util = {87, 0};
  auto m = make();
  m->round();
  std::string text = m->exposition();
  EXPECT_TRUE(contains(text,
                       "DCGM_FI_DEV_GPU_UTIL{Hostname=\"gpu-node-01\",UUID=\"GPU-0\","
                       "device=\"nvidia0\",gpu=\"0\",job=\"12\",modelName=\"NVIDIA "
                       "A100-SXM4-80GB\",project=\"vision\",user=\"ada\"} 87"))
      << text;
  EXPECT_TRUE(
      contains(text, "job=\"\",modelName=\"NVIDIA A100-SXM4-80GB\",project=\"\",user=\"\"} 0"))
      << text;
  EXPECT_TRUE(contains(
      text, "trainyard_job_gpu_idle_seconds{job=\"12\",project=\"vision\",user=\"ada\"} 0"))
      << text;
  EXPECT_TRUE(contains(text,
                       "trainyard_ghost_gpu_processes{Hostname=\"gpu-node-01\",UUID=\"GPU-1\","
                       "gpu=\"1\"} 0"))
      << text;
}

TEST_F(GpuMonitorTest, IdleJobGetsItsEventAndSeries) {
  hold(0, 12);
  hold(1, 12);
  script_->util = {1, 1};
  DiagnosisConfig config;
  config.idle_after = 3 * kInterval;
  auto m = make(config);
  rounds(*m, 4);
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].reason, kEventGpuIdle);
  EXPECT_TRUE(contains(events_[0].message, "GPU idle for 3m: its 2 GPUs averaged 1% utilisation"))
      << events_[0].message;
  EXPECT_TRUE(contains(m->exposition(),
                       "trainyard_job_gpu_idle_seconds{job=\"12\",project=\"vision\",user=\"ada\"} "
                       "180"));
  EXPECT_TRUE(stopped_.empty());
}

TEST_F(GpuMonitorTest, IdleStopAfterStopsTheJobAfterItsEvent) {
  hold(0, 12);
  DiagnosisConfig config;
  config.idle_after = kInterval;
  config.idle_stop_after = kInterval;
  auto m = make(config);
  rounds(*m, 3);
  ASSERT_EQ(stopped_.size(), 1u);
  EXPECT_EQ(stopped_[0], JobId(12));
  ASSERT_EQ(events_.size(), 2u);
  EXPECT_EQ(events_[1].reason, kEventIdleStop);
}

TEST_F(GpuMonitorTest, InputBoundFromTheJobsCpuTime) {
  hold(0, 5);
  script_->util = {30, 0};
  procs_.pids[100] = ProcJobProcess{JobId(5), 1};
  auto m = make();  // window 5m
  // The job burns both of its 2 CPUs: 120 CPU-seconds per minute.
  for (int i = 0; i < 8; ++i) {
    procs_.cpu_seconds[JobId(5)] = 120.0 * i;
    m->round();
    clock_.advance(kInterval);
  }
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].reason, kEventInputBound);
  EXPECT_TRUE(contains(events_[0].message,
                       "GPU idle 70% of the time over the last 5m while the "
                       "job's CPU is at 100%: likely data loading"))
      << events_[0].message;
}

TEST_F(GpuMonitorTest, GhostOfAnEndedJobKeepsTheGpuOutUntilItExits) {
  jobs_[JobId(9)] = makeJob(9, JobState::kSucceeded);
  procs_.pids[4321] = ProcJobProcess{JobId(9), 1};
  script_->processes[1] = {{4321, 1024 * kMib}};
  DiagnosisConfig config;
  config.kill_ghosts = true;
  auto m = make(config);
  rounds(*m, 2);
  EXPECT_EQ(health_, std::vector<std::string>{"gpu-node-01 1 ghost process 4321 holds 1024 MiB"});
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].job, JobId(9));
  EXPECT_EQ(events_[0].reason, kEventGhostProcess);
  EXPECT_EQ(killed_, std::vector<std::int64_t>{4321});
  std::string text = m->exposition();
  EXPECT_TRUE(contains(text,
                       "trainyard_ghost_gpu_processes{Hostname=\"gpu-node-01\",UUID=\"GPU-1\","
                       "gpu=\"1\"} 1"))
      << text;
  EXPECT_TRUE(contains(text,
                       "trainyard_gpu_process_memory_bytes{Hostname=\"gpu-node-01\","
                       "UUID=\"GPU-1\",gpu=\"1\",job=\"9\",pid=\"4321\"}"))
      << text;

  script_->processes[1].clear();
  procs_.pids.clear();
  rounds(*m, 1);
  EXPECT_EQ(health_.back(), "gpu-node-01 1 healthy");
  EXPECT_TRUE(contains(m->exposition(),
                       "trainyard_ghost_gpu_processes{Hostname=\"gpu-node-01\","
                       "UUID=\"GPU-1\",gpu=\"1\"} 0"))
      << m->exposition();
}

TEST_F(GpuMonitorTest, ForeignProcessIsAGhostButNeverKilled) {
  script_->processes[0] = {{777, 10 * kMib}};
  DiagnosisConfig config;
  config.kill_ghosts = true;
  auto m = make(config);
  rounds(*m, 3);
  EXPECT_EQ(health_, std::vector<std::string>{"gpu-node-01 0 ghost process 777 holds 10 MiB"});
  EXPECT_TRUE(killed_.empty());
  EXPECT_TRUE(events_.empty());  // no job to tell
}

TEST_F(GpuMonitorTest, ProcessOfAnEarlierAttemptIsALeftover) {
  hold(0, 3);
  jobs_[JobId(3)].attempts = 2;
  procs_.pids[50] = ProcJobProcess{JobId(3), 1};
  procs_.pids[60] = ProcJobProcess{JobId(3), 2};
  script_->processes[0] = {{50, kMib}, {60, kMib}};
  auto m = make();
  rounds(*m, 2);
  EXPECT_EQ(health_, std::vector<std::string>{"gpu-node-01 0 ghost process 50 holds 1 MiB"});
}

TEST_F(GpuMonitorTest, EccRiseMarksTheGpuUnhealthyAndTellsItsJob) {
  hold(1, 4);
  script_->util = {0, 90};
  auto m = make();
  rounds(*m, 1);
  script_->ecc_dbe = {0, 2};
  rounds(*m, 1);
  EXPECT_EQ(health_,
            std::vector<std::string>{"gpu-node-01 1 ECC double-bit errors rose from 0 to 2"});
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].job, JobId(4));
  EXPECT_EQ(events_[0].reason, kEventGpuUnhealthy);
}

TEST_F(GpuMonitorTest, HardwareXidMarksTheGpuUnhealthyWithTheXidAsReason) {
  hold(1, 4);
  script_->util = {0, 90};
  script_->xids[1] = {79};
  auto m = make();
  rounds(*m, 2);
  EXPECT_EQ(health_, std::vector<std::string>{"gpu-node-01 1 " + describeXid(79)});
  EXPECT_TRUE(contains(health_.at(0), "XID 79")) << health_.at(0);
  ASSERT_EQ(events_.size(), 1u);
  EXPECT_EQ(events_[0].job, JobId(4));
  EXPECT_EQ(events_[0].reason, kEventGpuUnhealthy);
  EXPECT_TRUE(contains(events_[0].message, "XID 79")) << events_[0].message;
}

TEST_F(GpuMonitorTest, ApplicationXidLeavesTheGpuHealthy) {
  hold(0, 4);
  script_->xids[0] = {13};  // graphics engine exception: the job's own fault
  auto m = make();
  rounds(*m, 1);
  EXPECT_TRUE(health_.empty());
  EXPECT_TRUE(events_.empty());
}

TEST_F(GpuMonitorTest, LiveStateKeepsTheLatestReadingsAndARingOfUtilisation) {
  auto m = make();
  EXPECT_TRUE(m->liveState().empty());  // before the first round
  const Timestamp start = clock_.now();
  for (unsigned i = 0; i < kGpuHistorySamples + 5; ++i) {
    script_->util = {i % 100, 50};
    m->round();
    clock_.advance(kInterval);
  }
  GpuLiveState live = m->liveState();
  ASSERT_EQ(live.size(), 2u);
  const GpuLiveView& g0 = live.at({"gpu-node-01", 0});
  EXPECT_EQ(g0.util_percent, std::optional<double>(24));  // (120 + 5 - 1) % 100
  EXPECT_EQ(g0.memory_used_bytes, std::optional<std::int64_t>(0));
  // The last 120 of 125 rounds, oldest first.
  ASSERT_EQ(g0.history.size(), kGpuHistorySamples);
  EXPECT_EQ(g0.history.front(), (std::pair<Timestamp, double>{start + 5 * kInterval, 5}));
  EXPECT_EQ(g0.history.back(), (std::pair<Timestamp, double>{start + 124 * kInterval, 24}));
  EXPECT_EQ(live.at({"gpu-node-01", 1}).history.back().second, 50);
  EXPECT_EQ(g0.idle_since, 0);
  EXPECT_TRUE(g0.ghost_pids.empty());
}

TEST_F(GpuMonitorTest, LiveStateCarriesTheIdleSpellAndTheGhosts) {
  hold(0, 12);
  script_->util = {1, 0};
  script_->processes[1] = {{4321, 512 * kMib}};  // nobody's
  auto m = make();
  const Timestamp start = clock_.now();
  rounds(*m, 3);
  GpuLiveState live = m->liveState();
  // Job 12's GPU has been idle since the first round; GPU 1 is held by no
  // job, so it is not "idle while held".
  EXPECT_EQ(live.at({"gpu-node-01", 0}).idle_since, start);
  EXPECT_EQ(live.at({"gpu-node-01", 1}).idle_since, 0);
  EXPECT_EQ(live.at({"gpu-node-01", 1}).ghost_pids, std::vector<std::int64_t>{4321});
  EXPECT_TRUE(live.at({"gpu-node-01", 0}).ghost_pids.empty());

  // Busy again: the spell ends. The ghost exits: the list empties.
  script_->util = {90, 0};
  script_->processes[1].clear();
  rounds(*m, 1);
  live = m->liveState();
  EXPECT_EQ(live.at({"gpu-node-01", 0}).idle_since, 0);
  EXPECT_TRUE(live.at({"gpu-node-01", 1}).ghost_pids.empty());
}

}  // namespace
}  // namespace ty
