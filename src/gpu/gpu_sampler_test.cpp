// GpuSampler over tests/fake_nvml (FAKE_NVML_LIB) through the real dlopen
// path, and over scripted readers.

#include "gpu/gpu_sampler.h"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gpu/gpu_provider.h"

#ifndef FAKE_NVML_LIB
#error "FAKE_NVML_LIB must name the fake NVML library (tests/CMakeLists.txt)"
#endif

namespace ty {
namespace {

constexpr std::int64_t kMib = std::int64_t{1} << 20;
constexpr std::int64_t kGib = std::int64_t{1} << 30;

constexpr const char* kFakeEnv[] = {
    "FAKE_NVML_GPUS",        "FAKE_NVML_INIT_ERROR", "FAKE_NVML_TOPOLOGY",
    "FAKE_NVML_GPU_UTIL",    "FAKE_NVML_MEM_UTIL",   "FAKE_NVML_MEMORY_USED_MIB",
    "FAKE_NVML_TEMPERATURE", "FAKE_NVML_POWER_MW",   "FAKE_NVML_SM_CLOCK",
    "FAKE_NVML_ECC_SBE",     "FAKE_NVML_ECC_DBE",    "FAKE_NVML_THROTTLE_REASONS",
    "FAKE_NVML_PROCESSES",   "FAKE_NVML_XID",
};

// The fake built without the sampling entry points, beside FAKE_NVML_LIB
// (tests/fake_nvml/CMakeLists.txt).
std::string fakeWithoutSampling() {
  return (std::filesystem::path(FAKE_NVML_LIB).parent_path() / "libnvidia-ml-fake-no-sampling.so")
      .string();
}

// The fake without nvmlEventSetWait_v2, as a driver from before MIG.
std::string fakeWithEventWaitV1() {
  return (std::filesystem::path(FAKE_NVML_LIB).parent_path() / "libnvidia-ml-fake-events-v1.so")
      .string();
}

using Xids = std::vector<std::uint64_t>;

class GpuSamplerNvmlTest : public ::testing::Test {
 protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char* name : kFakeEnv) unsetenv(name);
  }
  static void script(const std::map<std::string, std::string>& env) {
    for (const auto& [name, value] : env) setenv(name.c_str(), value.c_str(), 1);
  }
  // One sample from the library at `path`; a test failure when it does not
  // load.
  static NodeSample sampleOnce(const std::string& path = FAKE_NVML_LIB) {
    Result<std::unique_ptr<GpuReader>> reader = openNvmlGpuReader(path);
    EXPECT_TRUE(reader.isOk()) << reader.status().toString();
    if (!reader.isOk()) return {};
    GpuSampler sampler(std::move(*reader));
    return sampler.sample();
  }
};

TEST_F(GpuSamplerNvmlTest, ValuesComeOutAsScripted) {
  script({{"FAKE_NVML_GPUS", "2xA100-80GB"},
          {"FAKE_NVML_GPU_UTIL", "90,7"},
          {"FAKE_NVML_MEM_UTIL", "40,1"},
          {"FAKE_NVML_MEMORY_USED_MIB", "2560,0"},
          {"FAKE_NVML_TEMPERATURE", "65,31"},
          {"FAKE_NVML_POWER_MW", "250500,60000"},
          {"FAKE_NVML_SM_CLOCK", "1410,210"},
          {"FAKE_NVML_ECC_SBE", "3,0"},
          {"FAKE_NVML_ECC_DBE", "0,1"},
          {"FAKE_NVML_THROTTLE_REASONS", "0x4,0"},
          {"FAKE_NVML_PROCESSES", "100:2048,101:-;"}});
  NodeSample s = sampleOnce();
  EXPECT_EQ(s.errors, 0);
  EXPECT_EQ(s.unsupported, 0);
  EXPECT_TRUE(s.problems.empty());
  ASSERT_EQ(s.gpus.size(), 2u);

  const GpuSample& g0 = s.gpus[0];
  EXPECT_EQ(g0.index, 0);
  EXPECT_EQ(g0.uuid, "GPU-00000000-0000-4000-8000-000000000000");
  EXPECT_EQ(g0.model, "NVIDIA A100-80GB");
  EXPECT_EQ(g0.gpu_util_percent, 90.0);
  EXPECT_EQ(g0.mem_copy_util_percent, 40.0);
  EXPECT_EQ(g0.memory_used_bytes, 2560 * kMib);
  EXPECT_EQ(g0.memory_free_bytes, 80 * kGib - 2560 * kMib);
  EXPECT_EQ(g0.temperature_celsius, 65.0);
  EXPECT_EQ(g0.power_watts, 250.5);
  EXPECT_EQ(g0.sm_clock_mhz, 1410.0);
  EXPECT_EQ(g0.ecc_single_bit_volatile, 3u);
  EXPECT_EQ(g0.ecc_double_bit_volatile, 0u);
  EXPECT_EQ(g0.throttle_reasons, 4u);
  ASSERT_TRUE(g0.processes.has_value());
  std::vector<GpuProcessSample> want = {{100, 2048 * kMib}, {101, std::nullopt}};
  EXPECT_EQ(*g0.processes, want);

  const GpuSample& g1 = s.gpus[1];
  EXPECT_EQ(g1.gpu_util_percent, 7.0);
  EXPECT_EQ(g1.power_watts, 60.0);
  EXPECT_EQ(g1.ecc_double_bit_volatile, 1u);
  ASSERT_TRUE(g1.processes.has_value());
  EXPECT_TRUE(g1.processes->empty());
}

TEST_F(GpuSamplerNvmlTest, UnscriptedGpusTakeTheDefaults) {
  script({{"FAKE_NVML_GPUS", "1xH100-80GB"}});
  NodeSample s = sampleOnce();
  ASSERT_EQ(s.gpus.size(), 1u);
  const GpuSample& g = s.gpus[0];
  EXPECT_EQ(g.gpu_util_percent, 0.0);
  EXPECT_EQ(g.memory_used_bytes, 0);
  EXPECT_EQ(g.memory_free_bytes, 80 * kGib);
  EXPECT_EQ(g.temperature_celsius, 40.0);
  EXPECT_EQ(g.power_watts, 70.0);
  EXPECT_EQ(g.sm_clock_mhz, 1410.0);
  EXPECT_EQ(g.throttle_reasons, 0u);
  EXPECT_EQ(g.processes, std::vector<GpuProcessSample>{});
}

TEST_F(GpuSamplerNvmlTest, NotSupportedLeavesTheFieldUnsetAndIsNoError) {
  // A board without a power sensor or ECC, and one whose process list is
  // not offered.
  script({{"FAKE_NVML_GPUS", "2xL40S-48GB"},
          {"FAKE_NVML_POWER_MW", "-"},
          {"FAKE_NVML_ECC_SBE", "-,-"},
          {"FAKE_NVML_ECC_DBE", "-,-"},
          {"FAKE_NVML_PROCESSES", ";-"}});
  NodeSample s = sampleOnce();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.errors, 0);
  EXPECT_EQ(s.gpus[0].unsupported, 3);
  EXPECT_EQ(s.gpus[1].unsupported, 3);
  EXPECT_EQ(s.unsupported, 6);
  EXPECT_FALSE(s.gpus[0].power_watts.has_value());
  EXPECT_EQ(s.gpus[1].power_watts, 70.0);
  EXPECT_FALSE(s.gpus[0].ecc_single_bit_volatile.has_value());
  EXPECT_FALSE(s.gpus[1].ecc_double_bit_volatile.has_value());
  EXPECT_EQ(s.gpus[0].processes, std::vector<GpuProcessSample>{});
  EXPECT_FALSE(s.gpus[1].processes.has_value());
  // The rest is still read.
  EXPECT_EQ(s.gpus[0].temperature_celsius, 40.0);
}

TEST_F(GpuSamplerNvmlTest, AFailedReadIsCountedAndNamed) {
  script({{"FAKE_NVML_GPUS", "2xA100-80GB"},
          {"FAKE_NVML_TEMPERATURE", ",!15"},
          {"FAKE_NVML_PROCESSES", ";!4"}});
  NodeSample s = sampleOnce();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[0].errors, 0);
  EXPECT_EQ(s.gpus[1].errors, 2);
  EXPECT_EQ(s.errors, 2);
  EXPECT_EQ(s.unsupported, 0);
  EXPECT_FALSE(s.gpus[1].temperature_celsius.has_value());
  EXPECT_FALSE(s.gpus[1].processes.has_value());
  EXPECT_EQ(s.gpus[1].gpu_util_percent, 0.0);
  ASSERT_EQ(s.problems.size(), 2u);
  EXPECT_NE(s.problems[0].find("GPU 1: nvmlDeviceGetTemperature failed: GPU is lost"),
            std::string::npos)
      << s.problems[0];
  EXPECT_NE(s.problems[1].find("nvmlDeviceGetComputeRunningProcesses_v3"), std::string::npos)
      << s.problems[1];
}

TEST_F(GpuSamplerNvmlTest, AnOlderDriverWithoutTheSamplingSymbolsStillLoads) {
  script({{"FAKE_NVML_GPUS", "1xV100-32GB"}, {"FAKE_NVML_GPU_UTIL", "50"}});
  NodeSample s = sampleOnce(fakeWithoutSampling());
  ASSERT_EQ(s.gpus.size(), 1u);
  const GpuSample& g = s.gpus[0];
  EXPECT_EQ(g.model, "NVIDIA V100-32GB");
  EXPECT_EQ(g.memory_free_bytes, 32 * kGib);
  EXPECT_FALSE(g.gpu_util_percent.has_value());
  EXPECT_FALSE(g.temperature_celsius.has_value());
  EXPECT_FALSE(g.power_watts.has_value());
  EXPECT_FALSE(g.sm_clock_mhz.has_value());
  EXPECT_FALSE(g.ecc_single_bit_volatile.has_value());
  EXPECT_FALSE(g.throttle_reasons.has_value());
  EXPECT_FALSE(g.processes.has_value());
  EXPECT_TRUE(g.xids.empty());
  // utilisation, temperature, power, clock, 2 x ECC, throttling, processes,
  // XIDs
  EXPECT_EQ(g.unsupported, 9);
  EXPECT_EQ(s.errors, 0);
}

TEST_F(GpuSamplerNvmlTest, ALongProcessListIsReadWhole) {
  // More processes than the first buffer holds: NVML answers
  // INSUFFICIENT_SIZE and the list is read again, larger.
  std::string list;
  for (int pid = 1000; pid < 1040; ++pid) {
    list += (list.empty() ? "" : ",") + std::to_string(pid) + ":1";
  }
  script({{"FAKE_NVML_GPUS", "1xA100-80GB"}, {"FAKE_NVML_PROCESSES", list}});
  NodeSample s = sampleOnce();
  ASSERT_EQ(s.gpus.size(), 1u);
  ASSERT_TRUE(s.gpus[0].processes.has_value());
  ASSERT_EQ(s.gpus[0].processes->size(), 40u);
  EXPECT_EQ(s.gpus[0].processes->front().pid, 1000);
  EXPECT_EQ(s.gpus[0].processes->back().pid, 1039);
  EXPECT_EQ(s.gpus[0].processes->back().used_memory_bytes, kMib);
}

TEST_F(GpuSamplerNvmlTest, AMalformedScriptFailsTheLoad) {
  for (const auto& [name, value] :
       std::vector<std::pair<std::string, std::string>>{{"FAKE_NVML_GPU_UTIL", "1,2,3"},
                                                        {"FAKE_NVML_POWER_MW", "lots"},
                                                        {"FAKE_NVML_PROCESSES", "100"},
                                                        {"FAKE_NVML_PROCESSES", "0:1"},
                                                        {"FAKE_NVML_XID", "2:79"},
                                                        {"FAKE_NVML_XID", "79"},
                                                        {"FAKE_NVML_XID", "1:"}}) {
    clear();
    script({{"FAKE_NVML_GPUS", "2xA100-80GB"}, {name, value}});
    Result<std::unique_ptr<GpuReader>> reader = openNvmlGpuReader(FAKE_NVML_LIB);
    ASSERT_FALSE(reader.isOk()) << name << "=" << value;
    EXPECT_NE(reader.status().message().find("Unknown Error"), std::string::npos)
        << reader.status().message();
  }
}

TEST_F(GpuSamplerNvmlTest, AnXidLandsOnItsGpuOnce) {
  script({{"FAKE_NVML_GPUS", "2xH100-80GB"}, {"FAKE_NVML_XID", "1:79"}});
  Result<std::unique_ptr<GpuReader>> reader = openNvmlGpuReader(FAKE_NVML_LIB);
  ASSERT_TRUE(reader.isOk()) << reader.status().toString();
  GpuSampler sampler(std::move(*reader));

  NodeSample first = sampler.sample();
  ASSERT_EQ(first.gpus.size(), 2u);
  EXPECT_EQ(first.gpus[1].xids, Xids{79});
  EXPECT_TRUE(first.gpus[0].xids.empty());
  EXPECT_EQ(first.errors, 0);
  EXPECT_EQ(first.unsupported, 0);

  // Reported once: the next sample has nothing new.
  NodeSample second = sampler.sample();
  ASSERT_EQ(second.gpus.size(), 2u);
  EXPECT_TRUE(second.gpus[1].xids.empty());
  EXPECT_TRUE(second.gpus[0].xids.empty());
  EXPECT_EQ(second.errors, 0);
}

TEST_F(GpuSamplerNvmlTest, XidsKeepTheirOrderAndTheirGpu) {
  script({{"FAKE_NVML_GPUS", "3xA100-80GB"}, {"FAKE_NVML_XID", "2:48,0:13,2:79,0:31"}});
  NodeSample s = sampleOnce();
  ASSERT_EQ(s.gpus.size(), 3u);
  EXPECT_EQ(s.gpus[0].xids, (Xids{13, 31}));
  EXPECT_TRUE(s.gpus[1].xids.empty());
  EXPECT_EQ(s.gpus[2].xids, (Xids{48, 79}));
}

TEST_F(GpuSamplerNvmlTest, XidEventsNotSupportedOnAGpuAreNoError) {
  // Registration answers NVML_ERROR_NOT_SUPPORTED for GPU 0, as inside some
  // virtual machines; GPU 1 still reports its XIDs.
  script({{"FAKE_NVML_GPUS", "2xA100-80GB"}, {"FAKE_NVML_XID", "0:-,1:79"}});
  Result<std::unique_ptr<GpuReader>> reader = openNvmlGpuReader(FAKE_NVML_LIB);
  ASSERT_TRUE(reader.isOk()) << reader.status().toString();
  GpuSampler sampler(std::move(*reader));
  for (int round = 0; round < 2; ++round) {
    NodeSample s = sampler.sample();
    ASSERT_EQ(s.gpus.size(), 2u);
    EXPECT_EQ(s.gpus[0].unsupported, 1) << round;
    EXPECT_TRUE(s.gpus[0].xids.empty()) << round;
    EXPECT_EQ(s.gpus[1].xids, round == 0 ? Xids{79} : Xids{}) << round;
    EXPECT_EQ(s.errors, 0) << round;
    EXPECT_EQ(s.unsupported, 1) << round;
  }
}

TEST_F(GpuSamplerNvmlTest, AFailedXidRegistrationIsCountedAndTriedAgain) {
  script({{"FAKE_NVML_GPUS", "1xA100-80GB"}, {"FAKE_NVML_XID", "0:!15"}});
  Result<std::unique_ptr<GpuReader>> reader = openNvmlGpuReader(FAKE_NVML_LIB);
  ASSERT_TRUE(reader.isOk()) << reader.status().toString();
  GpuSampler sampler(std::move(*reader));
  for (int round = 0; round < 2; ++round) {
    NodeSample s = sampler.sample();
    ASSERT_EQ(s.gpus.size(), 1u);
    EXPECT_EQ(s.errors, 1) << round;
    EXPECT_EQ(s.unsupported, 0) << round;
    ASSERT_EQ(s.problems.size(), 1u) << round;
    EXPECT_NE(s.problems[0].find("GPU 0: nvmlDeviceRegisterEvents failed: GPU is lost"),
              std::string::npos)
        << s.problems[0];
  }
}

TEST_F(GpuSamplerNvmlTest, XidsComeThroughTheUnversionedWaitOfAnOlderDriver) {
  script({{"FAKE_NVML_GPUS", "2xV100-32GB"}, {"FAKE_NVML_XID", "1:79"}});
  NodeSample s = sampleOnce(fakeWithEventWaitV1());
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1].xids, Xids{79});
  EXPECT_TRUE(s.gpus[0].xids.empty());
  EXPECT_EQ(s.errors, 0);
  EXPECT_EQ(s.unsupported, 0);
}

TEST_F(GpuSamplerNvmlTest, TwoReadersEachSeeTheXidsOnce) {
  script({{"FAKE_NVML_GPUS", "2xA100-80GB"}, {"FAKE_NVML_XID", "1:79"}});
  Result<std::unique_ptr<GpuReader>> a = openNvmlGpuReader(FAKE_NVML_LIB);
  Result<std::unique_ptr<GpuReader>> b = openNvmlGpuReader(FAKE_NVML_LIB);
  ASSERT_TRUE(a.isOk() && b.isOk());
  GpuSampler sa(std::move(*a));
  GpuSampler sb(std::move(*b));
  EXPECT_EQ(sa.sample().gpus.at(1).xids, Xids{79});
  EXPECT_EQ(sb.sample().gpus.at(1).xids, Xids{79});
  EXPECT_TRUE(sa.sample().gpus.at(1).xids.empty());
}

TEST_F(GpuSamplerNvmlTest, AMissingLibraryIsUnavailable) {
  Result<std::unique_ptr<GpuReader>> reader = openNvmlGpuReader("libnvidia-ml-none.so.1");
  ASSERT_FALSE(reader.isOk());
  EXPECT_EQ(reader.status().code(), StatusCode::kUnavailable);
}

// A reader whose every read answers `status`, and whose GPU count is `count`.
class FailingReader final : public GpuReader {
 public:
  FailingReader(Result<unsigned> count, Status status)
      : count_(std::move(count)), status_(std::move(status)) {}
  Result<unsigned> gpuCount() override { return count_; }
  Result<GpuIdentity> identity(unsigned) override { return status_; }
  Result<GpuUtilization> utilization(unsigned) override { return status_; }
  Result<GpuMemoryUse> memory(unsigned) override { return status_; }
  Result<unsigned> temperatureCelsius(unsigned) override { return status_; }
  Result<unsigned> powerMilliwatts(unsigned) override { return status_; }
  Result<unsigned> smClockMhz(unsigned) override { return status_; }
  Result<std::uint64_t> eccErrors(unsigned, EccErrorKind) override { return status_; }
  Result<std::uint64_t> throttleReasons(unsigned) override { return status_; }
  Result<std::vector<GpuProcessSample>> computeProcesses(unsigned) override { return status_; }
  Result<std::vector<std::uint64_t>> xids(unsigned) override { return status_; }

 private:
  Result<unsigned> count_;
  Status status_;
};

TEST(GpuSamplerTest, AFailedGpuCountGivesNoGpusAndOneError) {
  GpuSampler sampler(std::make_unique<FailingReader>(
      Status::unavailable("nvmlDeviceGetCount_v2 failed: GPU is lost"), Status::internal("x")));
  NodeSample s = sampler.sample();
  EXPECT_TRUE(s.gpus.empty());
  EXPECT_EQ(s.errors, 1);
  EXPECT_EQ(s.problems, std::vector<std::string>{"nvmlDeviceGetCount_v2 failed: GPU is lost"});
}

TEST(GpuSamplerTest, EveryReadFailingLeavesOnlyTheIndexAndKeepsFewProblems) {
  GpuSampler sampler(std::make_unique<FailingReader>(3u, Status::unavailable("timeout")));
  NodeSample s = sampler.sample();
  ASSERT_EQ(s.gpus.size(), 3u);
  GpuSample bare;
  bare.index = 2;
  // identity, utilisation, memory, 3 sensors, 2 x ECC, throttling, processes, XIDs
  bare.errors = 11;
  EXPECT_EQ(s.gpus[2], bare);
  EXPECT_EQ(s.errors, 33);
  EXPECT_EQ(s.problems.size(), NodeSample::kMaxProblems);
  EXPECT_EQ(s.problems[0], "GPU 0: timeout");
}

TEST(GpuSamplerTest, FakeGpusAreIdleWithAllMemoryFree) {
  Result<std::vector<GpuInfo>> gpus = parseFakeGpus("2xA100-80GB", "node-a");
  ASSERT_TRUE(gpus.isOk());
  GpuSampler sampler(newFakeGpuReader(*gpus));
  NodeSample s = sampler.sample();
  ASSERT_EQ(s.gpus.size(), 2u);
  EXPECT_EQ(s.gpus[1].uuid, "GPU-fake-node-a-1");
  EXPECT_EQ(s.gpus[1].model, "A100-80GB");
  EXPECT_EQ(s.gpus[1].gpu_util_percent, 0.0);
  EXPECT_EQ(s.gpus[1].memory_used_bytes, 0);
  EXPECT_EQ(s.gpus[1].memory_free_bytes, 80 * kGib);
  EXPECT_EQ(s.gpus[1].processes, std::vector<GpuProcessSample>{});
  EXPECT_FALSE(s.gpus[1].temperature_celsius.has_value());
  EXPECT_TRUE(s.gpus[1].xids.empty());
  EXPECT_EQ(s.errors, 0);
  EXPECT_EQ(s.unsupported, 14);  // 3 sensors, 2 x ECC, throttling, XIDs on each GPU
}

}  // namespace
}  // namespace ty
