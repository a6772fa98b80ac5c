#include "exec/local/container.h"

#include <gtest/gtest.h>

#include <set>

namespace ty {
namespace {

TEST(ContainerTest, NameFromAttemptAndReplica) {
  EXPECT_EQ(containerName("0badcafe", AttemptKey{JobId(42), 3}, 1), "ty-0badcafe-42-3-1");
  EXPECT_EQ(instanceTag("/srv/a").size(), 8u);
  EXPECT_NE(instanceTag("/srv/a"), instanceTag("/srv/b"));
  EXPECT_EQ(instanceTag("/srv/a"), instanceTag("/srv/a"));
}

TEST(ContainerTest, PodmanRunArgvWithEverything) {
  ContainerConfig cfg;
  cfg.network = "none";
  cfg.ulimits = {"nofile=20000:20000"};
  ContainerRun run;
  run.name = "ty-1-1-0";
  run.image = "localhost/img:1";
  run.script = "echo $A; exit 3";
  run.cpus = Quantity::fromMilli(1500);
  run.memory_bytes = 1 << 30;
  run.workdir = "/w";
  run.env = {{"A", "x y"}, {"B", "2"}};
  run.gpus = {0, 1, 2};
  run.mounts = {{"/data/jobs/7", "/run/trainyard"}};
  std::set<std::string> devices = {"/dev/nvidia0", "/dev/nvidia2", "/dev/nvidiactl"};
  auto argv = podmanRunArgv("/usr/bin/podman", cfg, run,
                            [&](const std::string& p) { return devices.count(p) > 0; });
  std::vector<std::string> want = {"/usr/bin/podman",
                                   "run",
                                   "--rm",
                                   "--name",
                                   "ty-1-1-0",
                                   "--runtime",
                                   "runc",
                                   "--network",
                                   "none",
                                   "--ulimit",
                                   "nofile=20000:20000",
                                   "--cpus",
                                   "1.5",
                                   "--memory",
                                   "1073741824",
                                   "-w",
                                   "/w",
                                   "-v",
                                   "/data/jobs/7:/run/trainyard:rw",
                                   "-e",
                                   "A=x y",
                                   "-e",
                                   "B=2",
                                   "--device",
                                   "/dev/nvidia0",
                                   "--device",
                                   "/dev/nvidia2",
                                   "--device",
                                   "/dev/nvidiactl",
                                   "localhost/img:1",
                                   "sh",
                                   "-c",
                                   "echo $A; exit 3"};
  EXPECT_EQ(argv, want);
}

TEST(ContainerTest, PodmanRunArgvMinimalWithCommand) {
  ContainerConfig cfg;
  cfg.ulimits = {};
  ContainerRun run;
  run.name = "n";
  run.image = "img";
  run.command = {"python", "-c", "print(1)"};
  run.gpus = {0};
  auto argv = podmanRunArgv("podman", cfg, run, [](const std::string&) { return false; });
  std::vector<std::string> want = {"podman",    "run",  "--rm", "--name", "n",  "--runtime", "runc",
                                   "--network", "host", "img",  "python", "-c", "print(1)"};
  EXPECT_EQ(argv, want);
}

TEST(ContainerTest, KillAndRemoveArgv) {
  EXPECT_EQ(podmanKillArgv("podman", "n", 15),
            (std::vector<std::string>{"podman", "kill", "--signal", "15", "n"}));
  EXPECT_EQ(podmanRmArgv("podman", "n"),
            (std::vector<std::string>{"podman", "rm", "--force", "--time", "0", "n"}));
}

}  // namespace
}  // namespace ty
