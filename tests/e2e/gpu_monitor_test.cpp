// The server's GPU monitor through the real binary: GPUs scripted in the
// fake NVML (FAKE_NVML_LIB, loaded with --nvml-library) with a foreign
// process on one GPU and double-bit ECC errors on another. The monitor keeps
// both out of scheduling with the reason, tells an idle job so in its
// events, and serves its series on the server's /metrics.
#include <cstdlib>
#include <sstream>
#include <string>

#include "harness.h"

#ifndef FAKE_NVML_LIB
#error "FAKE_NVML_LIB must name the fake NVML library (tests/e2e/CMakeLists.txt)"
#endif

namespace ty::e2e {
namespace {

// A pid no process of the test machine is likely to have: it stands for a
// process started outside Trainyard.
constexpr const char* kGhostPid = "4194000";

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

class GpuMonitorE2eTest : public E2eTest {
 protected:
  void SetUp() override {
    // The server inherits the environment; the fake NVML reads it at
    // nvmlInit_v2.
    for (const auto& [name, value] : kScript) ::setenv(name, value, 1);
    writeFile(tmp_.sub("server.yaml"),
              "gpu_monitor:\n  sample_interval: 200ms\n  idle_after: 1s\n");
    E2eTest::SetUp();
  }
  void TearDown() override {
    E2eTest::TearDown();
    for (const auto& [name, value] : kScript) ::unsetenv(name);
  }
  std::vector<std::string> serverArgs() const override {
    return {"--nvml-library", FAKE_NVML_LIB, "--config", tmp_.sub("server.yaml")};
  }

  std::string metrics() const { return api().get("/metrics").body; }

  static constexpr std::pair<const char*, const char*> kScript[] = {
      {"FAKE_NVML_GPUS", "3xA100-80GB"},
      {"FAKE_NVML_GPU_UTIL", "0,0,0"},
      {"FAKE_NVML_ECC_DBE", "0,2,0"},
      {"FAKE_NVML_PROCESSES", ";;4194000:2048"},
  };
};

TEST_F(GpuMonitorE2eTest, GhostAndEccKeepGpusOutAndAnIdleJobIsTold) {
  const std::string ecc_series =
      "trainyard_gpu_unhealthy{Hostname=\"local\",UUID=\"GPU-00000000-0000-4000-8000-"
      "000000000001\",gpu=\"1\",reason=\"ECC double-bit errors rose from 0 to 2\"} 1";
  const std::string ghost_series =
      "trainyard_gpu_unhealthy{Hostname=\"local\",UUID=\"GPU-00000000-0000-4000-8000-"
      "000000000002\",gpu=\"2\",reason=\"ghost process " +
      std::string(kGhostPid) + " holds 2048 MiB\"} 1";
  std::string text;
  ASSERT_TRUE(waitFor(
      [&] {
        text = metrics();
        return contains(text, ecc_series) && contains(text, ghost_series);
      },
      15s))
      << text;
  EXPECT_TRUE(contains(text,
                       "trainyard_ghost_gpu_processes{Hostname=\"local\",UUID=\"GPU-"
                       "00000000-0000-4000-8000-000000000002\",gpu=\"2\"} 1"))
      << text;

  // Only GPU 0 is left: the first job runs there, the second waits, told
  // which GPUs are out and why.
  std::int64_t idle = api().submit(scriptJob("sleep 60", 1));
  ASSERT_TRUE(api().waitState(idle, "running"));
  std::int64_t waiting = api().submit(scriptJob("true", 1));
  std::string reason;
  ASSERT_TRUE(waitFor(
      [&] {
        reason = api().job(waiting).value("reason", "");
        return contains(reason, std::string("ghost process ") + kGhostPid + " holds 2048 MiB") &&
               contains(reason, "ECC double-bit errors rose from 0 to 2");
      },
      15s))
      << reason;
  EXPECT_EQ(api().state(waiting), "pending");

  // The running job's GPU stays at 0%: after idle_after (1s) it is told.
  std::vector<std::string> lines;
  ASSERT_TRUE(waitFor(
      [&] {
        lines = api().eventLines(idle);
        return anyContains(lines, "GpuIdle: GPU idle for");
      },
      15s))
      << joinLines(lines);
  EXPECT_TRUE(anyContains(lines, "its GPU averaged 0% utilisation since"));
  EXPECT_TRUE(anyContains(
      lines, "if the job is stuck, cancel it (trainyard cancel " + std::to_string(idle) + ")"))
      << joinLines(lines);

  text = metrics();
  const std::string job_labels =
      "job=\"" + std::to_string(idle) + "\",project=\"default\",user=\"admin\"";
  EXPECT_TRUE(contains(text, "trainyard_job_gpu_idle_seconds{" + job_labels + "}")) << text;
  // The DCGM series of GPU 0 carries its holder; labels come sorted, so
  // each is looked for on the line rather than as one run.
  bool labelled = false;
  std::istringstream series(text);
  for (std::string line; std::getline(series, line);) {
    if (line.rfind("DCGM_FI_DEV_GPU_UTIL{", 0) == 0 && contains(line, "gpu=\"0\"") &&
        contains(line, "job=\"" + std::to_string(idle) + "\"") &&
        contains(line, "project=\"default\"") && contains(line, "user=\"admin\"")) {
      labelled = true;
    }
  }
  EXPECT_TRUE(labelled) << text;

  // The whole exposition, the monitor's families appended to the control
  // plane's, is one valid document: no family twice, HELP and TYPE on each.
  if (fileExists("/usr/bin/promtool")) {
    ProcResult checked = runProcess({"/usr/bin/promtool", "check", "metrics"}, {}, 30s, text);
    // promtool exits 1 for lint remarks too; the DCGM label modelName is
    // camelCase by NVIDIA's choice, and is the only remark allowed.
    for (const std::string& line : splitLines(checked.out + checked.err)) {
      if (line.empty() || contains(line, "should be written in 'snake_case'")) continue;
      ADD_FAILURE() << "promtool: " << line << "\n" << text;
    }
  }

  ASSERT_EQ(api().request("POST", "/api/v1/jobs/" + std::to_string(idle) + "/cancel").status, 200);
  ASSERT_EQ(api().request("POST", "/api/v1/jobs/" + std::to_string(waiting) + "/cancel").status,
            200);
  api().waitDone(idle);
  expectNoLeftoverProcesses();
}

}  // namespace
}  // namespace ty::e2e
