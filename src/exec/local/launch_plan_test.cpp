#include "exec/local/launch_plan.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

GpuInfo gpu(int index, std::string uuid) {
  GpuInfo g;
  g.index = index;
  g.uuid = std::move(uuid);
  return g;
}

LaunchRequest twoNodeRequest() {
  LaunchRequest r;
  r.key = AttemptKey{JobId(7), 2};
  r.spec.command = {"python", "train.py"};
  r.spec.env = {{"RANK", "99"}, {"A", "1"}, {"PATH", "/opt/bin"}};
  r.replicas = {{"n1", {0, 1}}, {"n2", {4}}, {"n1", {}}};
  r.replica_gpus = {{gpu(0, "GPU-a"), gpu(1, "GPU-b")}, {gpu(4, "")}, {}};
  r.master_port = 1234;
  return r;
}

TEST(ReplicaEnvironmentTest, PlatformVariablesWinAndLocalRanksCountPerNode) {
  LaunchRequest r = twoNodeRequest();
  EnvMap env = replicaEnvironment(r, 2, {{"PATH", "/usr/bin"}, {"HOME", "/root"}}, false);
  EXPECT_EQ(env["PATH"], "/opt/bin");  // spec.env over inherited
  EXPECT_EQ(env["HOME"], "/root");
  EXPECT_EQ(env["A"], "1");
  EXPECT_EQ(env["RANK"], "2");  // platform over spec.env
  EXPECT_EQ(env["WORLD_SIZE"], "3");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "");
  EXPECT_EQ(env["NVIDIA_VISIBLE_DEVICES"], "void");
  EXPECT_EQ(env["TRAINYARD_JOB_ID"], "7");
  EXPECT_EQ(env["TRAINYARD_ATTEMPT"], "2");
  EXPECT_EQ(env["MASTER_PORT"], "1234");
}

TEST(ReplicaEnvironmentTest, GpuVariablesForProcessesAndContainers) {
  LaunchRequest r = twoNodeRequest();
  EnvMap p0 = replicaEnvironment(r, 0, {}, false);
  EXPECT_EQ(p0["CUDA_VISIBLE_DEVICES"], "0,1");
  EXPECT_EQ(p0["NVIDIA_VISIBLE_DEVICES"], "GPU-a,GPU-b");
  EnvMap c0 = replicaEnvironment(r, 0, {}, true);
  EXPECT_EQ(c0["CUDA_VISIBLE_DEVICES"], "GPU-a,GPU-b");
  EnvMap p1 = replicaEnvironment(r, 1, {}, false);
  EXPECT_EQ(p1["CUDA_VISIBLE_DEVICES"], "4");
  EXPECT_EQ(p1["NVIDIA_VISIBLE_DEVICES"], "4");  // UUID unknown
  EnvMap c1 = replicaEnvironment(r, 1, {}, true);
  EXPECT_EQ(c1["CUDA_VISIBLE_DEVICES"], "0");  // renumbered inside
}

TEST(ReplicaEnvironmentTest, AShareOfAGpuIsAnnounced) {
  LaunchRequest r;
  r.key = AttemptKey{JobId(3), 1};
  r.replicas = {{"n1", {2}, 250}};
  GpuInfo g = gpu(2, "GPU-c");
  g.memory_bytes = 80'000'000'000;
  r.replica_gpus = {{g}};
  EnvMap env = replicaEnvironment(r, 0, {}, false);
  EXPECT_EQ(env["CUDA_VISIBLE_DEVICES"], "2");
  EXPECT_EQ(env["TRAINYARD_GPU_SHARE"], "0.25");
  EXPECT_EQ(env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "25");
  EXPECT_EQ(env["TRAINYARD_GPU_MEMORY_LIMIT"], "20000000000");
  EnvMap whole = replicaEnvironment(twoNodeRequest(), 0, {}, false);
  EXPECT_EQ(whole.count("TRAINYARD_GPU_SHARE"), 0u);
}

TEST(UserArgvTest, ScriptRunsThroughShArgvNotAString) {
  JobSpec s;
  s.script = "echo 'a b'; exit 3";
  EXPECT_EQ(userArgv(s), (std::vector<std::string>{"/bin/sh", "-c", "echo 'a b'; exit 3"}));
  JobSpec c;
  c.command = {"a", "b c"};
  EXPECT_EQ(userArgv(c), c.command);
}

TEST(SupervisorArgsTest, RoundTrips) {
  SupervisorArgs a;
  a.run_dir = "/data/jobs/1/attempt-1/replica-0";
  a.log_max_bytes = 1000;
  a.log_max_files = 4;
  a.lock_fd = 3;
  a.cgroups = {"/sys/fs/cgroup/cpu/x", "/sys/fs/cgroup/memory/x"};
  a.workdir = "/w";
  a.argv = {"prog", "--", "--run-dir", ""};
  std::vector<std::string> argv = supervisorArgv({"/bin/trainyard", "__supervise"}, a);
  ASSERT_EQ(argv[0], "/bin/trainyard");
  std::vector<std::string> rest(argv.begin() + 1, argv.end());
  auto parsed = parseSupervisorArgs(rest);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();
  EXPECT_EQ(parsed->run_dir, a.run_dir);
  EXPECT_EQ(parsed->log_max_bytes, 1000);
  EXPECT_EQ(parsed->log_max_files, 4);
  EXPECT_EQ(parsed->cgroups, a.cgroups);
  EXPECT_EQ(parsed->workdir, "/w");
  EXPECT_EQ(parsed->argv, a.argv);
}

TEST(SupervisorArgsTest, RejectsBadInput) {
  EXPECT_FALSE(parseSupervisorArgs({"__supervise", "--run-dir", "/x"}).isOk());  // no --
  EXPECT_FALSE(parseSupervisorArgs({"__supervise", "--", "prog"}).isOk());       // no run dir
  EXPECT_FALSE(
      parseSupervisorArgs({"__supervise", "--run-dir", "/x", "--log-max-bytes", "0", "--", "p"})
          .isOk());
  EXPECT_FALSE(parseSupervisorArgs({"__supervise", "--bogus", "1", "--", "p"}).isOk());
}

}  // namespace
}  // namespace ty
