#include "metrics/gpu_metrics.h"

#include <gtest/gtest.h>
#include <prometheus/registry.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "metrics/exposition.h"
#include "metrics/metrics_test_util.h"

namespace ty {
namespace {

using test::findPromtool;
using test::promtoolCheck;
using test::PromtoolResult;
using test::seriesOf;

constexpr std::int64_t kMib = std::int64_t{1} << 20;
constexpr std::int64_t kGib = std::int64_t{1} << 30;

GpuSample busyGpu(int index) {
  GpuSample g;
  g.index = index;
  g.uuid = "GPU-00000000-0000-4000-8000-00000000000" + std::to_string(index);
  g.model = "NVIDIA A100-SXM4-80GB";
  g.gpu_util_percent = 90;
  g.mem_copy_util_percent = 35;
  g.memory_used_bytes = 10 * kGib + 123;  // DCGM shows whole MiB
  g.memory_free_bytes = 70 * kGib;
  g.temperature_celsius = 61;
  g.power_watts = 312.5;
  g.sm_clock_mhz = 1410;
  g.ecc_single_bit_volatile = 2;
  g.ecc_double_bit_volatile = 0;
  g.throttle_reasons = 4;
  g.processes = std::vector<GpuProcessSample>{{4242, 10 * kGib}};
  return g;
}

NodeSample nodeOf(std::vector<GpuSample> gpus) {
  NodeSample s;
  s.gpus = std::move(gpus);
  return s;
}

std::size_t familyCount(const prometheus::Registry& registry) { return registry.Collect().size(); }

const char kGpu0Held[] =
    "Hostname=node-a,UUID=GPU-00000000-0000-4000-8000-000000000000,device=nvidia0,gpu=0,job=42,"
    "modelName=NVIDIA A100-SXM4-80GB,project=vision,user=ada";
const char kGpu0Free[] =
    "Hostname=node-a,UUID=GPU-00000000-0000-4000-8000-000000000000,device=nvidia0,gpu=0,job=,"
    "modelName=NVIDIA A100-SXM4-80GB,project=,user=";

TEST(GpuMetricsTest, EverySeriesCarriesTheDcgmLabelsAndTheHolder) {
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "node-a");
  GpuAttribution who;
  who.holders[0] = {"42", "vision", "ada"};
  metrics.update(nodeOf({busyGpu(0)}), who);

  using Series = std::map<std::string, double>;
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_GPU_UTIL"), (Series{{kGpu0Held, 90}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_MEM_COPY_UTIL"), (Series{{kGpu0Held, 35}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_FB_USED"), (Series{{kGpu0Held, 10240}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_FB_FREE"), (Series{{kGpu0Held, 71680}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_GPU_TEMP"), (Series{{kGpu0Held, 61}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_POWER_USAGE"), (Series{{kGpu0Held, 312.5}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_SM_CLOCK"), (Series{{kGpu0Held, 1410}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL"), (Series{{kGpu0Held, 2}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"), (Series{{kGpu0Held, 0}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS"), (Series{{kGpu0Held, 4}}));
  // The process belongs to no job the attribution knows.
  EXPECT_EQ(seriesOf(registry, "trainyard_gpu_process_memory_bytes"),
            (Series{{"Hostname=node-a,UUID=GPU-00000000-0000-4000-8000-000000000000,gpu=0,job=,"
                     "pid=4242",
                     10.0 * kGib}}));
  EXPECT_EQ(seriesOf(registry, "trainyard_gpu_sample_errors_total"),
            (Series{{"Hostname=node-a", 0}}));
  EXPECT_EQ(metrics.seriesCount(), 11u);
}

TEST(GpuMetricsTest, AHolderChangeReplacesTheSeries) {
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "node-a");
  GpuAttribution held;
  held.holders[0] = {"42", "vision", "ada"};
  metrics.update(nodeOf({busyGpu(0)}), held);
  ASSERT_EQ(seriesOf(registry, "DCGM_FI_DEV_GPU_UTIL").count(kGpu0Held), 1u);

  // The job ends: the GPU is free, and only the free series is left.
  metrics.update(nodeOf({busyGpu(0)}), GpuAttribution{});
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_GPU_UTIL"),
            (std::map<std::string, double>{{kGpu0Free, 90}}));
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_POWER_USAGE").size(), 1u);
  EXPECT_EQ(metrics.seriesCount(), 11u);

  // Many jobs later there is still one series per GPU and family.
  for (int job = 100; job < 120; ++job) {
    GpuAttribution next;
    next.holders[0] = {std::to_string(job), "vision", "ada"};
    metrics.update(nodeOf({busyGpu(0)}), next);
  }
  auto util = seriesOf(registry, "DCGM_FI_DEV_GPU_UTIL");
  ASSERT_EQ(util.size(), 1u);
  EXPECT_NE(util.begin()->first.find("job=119,"), std::string::npos) << util.begin()->first;
  EXPECT_EQ(metrics.seriesCount(), 11u);
}

TEST(GpuMetricsTest, ProcessSeriesFollowTheProcesses) {
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "node-a");
  GpuSample gpu = busyGpu(0);
  gpu.processes = std::vector<GpuProcessSample>{{10, 1 * kMib}, {11, 2 * kMib}, {12, std::nullopt}};
  GpuAttribution who;
  who.holders[0] = {"42", "vision", "ada"};
  who.process_jobs[10] = "42";
  metrics.update(nodeOf({gpu}), who);
  const std::string prefix = "Hostname=node-a,UUID=" + gpu.uuid + ",gpu=0,";
  using Series = std::map<std::string, double>;
  // pid 11 runs on a held GPU but belongs to no job (a ghost); pid 12's
  // memory is unknown, so it has no value to show.
  EXPECT_EQ(seriesOf(registry, "trainyard_gpu_process_memory_bytes"),
            (Series{{prefix + "job=42,pid=10", 1.0 * kMib}, {prefix + "job=,pid=11", 2.0 * kMib}}));

  // pid 10 exits.
  gpu.processes = std::vector<GpuProcessSample>{{11, 3 * kMib}};
  metrics.update(nodeOf({gpu}), who);
  EXPECT_EQ(seriesOf(registry, "trainyard_gpu_process_memory_bytes"),
            (Series{{prefix + "job=,pid=11", 3.0 * kMib}}));

  // The list could not be read: nothing is shown rather than stale values.
  gpu.processes.reset();
  metrics.update(nodeOf({gpu}), who);
  EXPECT_TRUE(seriesOf(registry, "trainyard_gpu_process_memory_bytes").empty());
}

TEST(GpuMetricsTest, UnsetFieldsHaveNoSeriesAndVanishedGpusLoseTheirs) {
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "node-a");
  metrics.update(nodeOf({busyGpu(0), busyGpu(1)}), {});
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_GPU_TEMP").size(), 2u);

  GpuSample no_sensors = busyGpu(0);
  no_sensors.temperature_celsius.reset();
  no_sensors.power_watts.reset();
  metrics.update(nodeOf({no_sensors}), {});
  EXPECT_TRUE(seriesOf(registry, "DCGM_FI_DEV_GPU_TEMP").empty());
  EXPECT_TRUE(seriesOf(registry, "DCGM_FI_DEV_POWER_USAGE").empty());
  EXPECT_EQ(seriesOf(registry, "DCGM_FI_DEV_GPU_UTIL"),
            (std::map<std::string, double>{{kGpu0Free, 90}}));
}

TEST(GpuMetricsTest, SampleErrorsAccumulate) {
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "node-a");
  NodeSample s = nodeOf({busyGpu(0)});
  s.errors = 2;
  metrics.update(s, {});
  s.errors = 3;
  metrics.update(s, {});
  EXPECT_EQ(seriesOf(registry, "trainyard_gpu_sample_errors_total"),
            (std::map<std::string, double>{{"Hostname=node-a", 5}}));
}

TEST(GpuMetricsTest, DestructionRemovesTheFamilies) {
  prometheus::Registry registry;
  {
    GpuMetrics metrics(registry, "node-a");
    metrics.update(nodeOf({busyGpu(0)}), {});
    EXPECT_EQ(familyCount(registry), 12u);
  }
  EXPECT_EQ(familyCount(registry), 0u);
}

TEST(ExpositionTest, TextFormatHasTypesAndSeries) {
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "node-a");
  metrics.update(nodeOf({busyGpu(0)}), {});
  std::string text = serializeText(registry);
  EXPECT_NE(text.find("# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE trainyard_gpu_sample_errors_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("DCGM_FI_DEV_GPU_UTIL{Hostname=\"node-a\",UUID=\"GPU-00000000-0000-4000-"
                      "8000-000000000000\",device=\"nvidia0\",gpu=\"0\",job=\"\",modelName=\""
                      "NVIDIA A100-SXM4-80GB\",project=\"\",user=\"\"} 90\n"),
            std::string::npos)
      << text;
}

TEST(ExpositionTest, PromtoolAcceptsTheExposition) {
  std::string promtool = findPromtool();
  if (promtool.empty()) GTEST_SKIP() << "promtool is not installed (Debian package prometheus)";
  prometheus::Registry registry;
  GpuMetrics metrics(registry, "node-a");
  GpuSample quiet = busyGpu(1);
  quiet.power_watts.reset();
  quiet.processes = std::vector<GpuProcessSample>{};
  GpuAttribution who;
  who.holders[0] = {"42", "vision", "ada \"the\" admin\\"};  // needs escaping
  who.process_jobs[4242] = "42";
  NodeSample s = nodeOf({busyGpu(0), quiet});
  s.errors = 1;
  metrics.update(s, who);
  std::string text = serializeText(registry);

  PromtoolResult r = promtoolCheck(promtool, text);
  // Exit code 1 is a parse error; 3 is lint only. The one lint finding
  // allowed is the DCGM exporter's camelCase label (modelName), which the
  // names contract keeps so that existing dashboards work.
  ASSERT_NE(r.exit_code, 1) << r.output << "\n" << text;
  std::stringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty()) continue;
    EXPECT_TRUE(line.rfind("DCGM_FI_DEV_", 0) == 0 &&
                line.find(" label names should be written in 'snake_case' not 'camelCase'") !=
                    std::string::npos)
        << line;
  }
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 3) << r.exit_code << ": " << r.output;
}

}  // namespace
}  // namespace ty
