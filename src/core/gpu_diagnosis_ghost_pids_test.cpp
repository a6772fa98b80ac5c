// The ghost pids the diagnosis reports per GPU, which the nodes route shows:
// the same processes as the ghost count, and only for process lists read.
#include <gtest/gtest.h>

#include "core/gpu_diagnosis.h"

namespace ty {
namespace {

GpuObservation idleGpu(int index) {
  GpuObservation g;
  g.index = index;
  g.uuid = "GPU-" + std::to_string(index);
  g.util_percent = 0;
  g.ecc_double_bit = 0;
  g.processes = std::vector<GpuProcessObservation>{};
  return g;
}

TEST(GpuDiagnosisGhostPids, ConfirmedGhostsOfEachGpuAreListed) {
  DiagnosisConfig config;
  DiagnosisState state;
  DiagnosisInput in;
  in.now = 1'000'000;
  in.gpus = {idleGpu(0), idleGpu(1)};
  // 4321: left behind by ended job 9; 77: nobody's; 100: of running job 1.
  in.gpus[1].processes = std::vector<GpuProcessObservation>{{4321, 1 << 20}, {77, {}}, {100, {}}};
  in.pid_owners[4321] = PidOwner{JobId(9), false};
  in.pid_owners[100] = PidOwner{JobId(1), true};

  // The first round gives them an interval to exit: nothing yet.
  DiagnosisOutput out = diagnoseGpus(in, config, state);
  EXPECT_EQ(out.ghost_pids[0], std::vector<std::int64_t>{});
  EXPECT_EQ(out.ghost_pids[1], std::vector<std::int64_t>{});

  in.now += 5'000;
  out = diagnoseGpus(in, config, state);
  EXPECT_EQ(out.ghost_pids[0], std::vector<std::int64_t>{});
  EXPECT_EQ(out.ghost_pids[1], (std::vector<std::int64_t>{4321, 77}));
  EXPECT_EQ(out.ghost_processes[1], 2);

  // An unread process list says nothing about its ghosts.
  in.now += 5'000;
  in.gpus[1].processes.reset();
  out = diagnoseGpus(in, config, state);
  EXPECT_EQ(out.ghost_pids.count(1), 0u);
  EXPECT_EQ(out.ghost_pids.count(0), 1u);
}

}  // namespace
}  // namespace ty
