#include "exec/local/local_executor.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <csignal>
#include <map>
#include <mutex>
#include <set>

#include "exec/local/sys_util.h"
#include "exec/local/test_support.h"
#include "exec/log_files.h"
#include "exec/run_layout.h"

namespace ty {
namespace {

using ::ty::testing::processAlive;
using ::ty::testing::readText;
using ::ty::testing::TempDir;
using ::ty::testing::waitFor;

// Collects exits from the executor's thread.
class ExitLog {
 public:
  void add(const ReplicaExit& e) {
    std::lock_guard<std::mutex> lock(mu_);
    exits_.push_back(e);
    cv_.notify_all();
  }
  // The exit of (key, replica), waiting up to `timeout_ms`.
  std::optional<ReplicaExit> wait(const AttemptKey& key, int replica, int timeout_ms = 15'000) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<ReplicaExit> found;
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
      for (const auto& e : exits_) {
        if (e.key == key && e.replica == replica) {
          found = e;
          return true;
        }
      }
      return false;
    });
    return found;
  }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return exits_.size();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ReplicaExit> exits_;
};

class LocalExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    bin_ = ::ty::testing::trainyardBin();
    ASSERT_FALSE(bin_.empty())
        << "TRAINYARD_BIN is not set: point it at the built `trainyard` executable "
           "(ctest sets it; for a direct run: TRAINYARD_BIN=build/trainyard ./ty_exec_tests)";
    ASSERT_FALSE(data_.path().empty());
    ASSERT_FALSE(work_.path().empty());
    config_.data_dir = data_.path();
    config_.supervisor_command = {bin_, "__supervise"};
    config_.cgroup_parent = "trainyard-test-" + std::to_string(::getpid());
    config_.container.network = "none";
  }

  void TearDown() override {
    exec_.reset();
    // Nothing a test started may outlive it.
    auto cleanup = newLocalExecutor(config_);
    if (cleanup.isOk()) {
      for (const auto& key : launched_) {
        (void)(*cleanup)->signal(key, SIGKILL);
        (*cleanup)->release(key);
      }
    }
    // The cgroup parents of this test process (v1: under its own cgroups).
    std::istringstream self(readText("/proc/self/cgroup"));
    std::string line;
    while (std::getline(self, line)) {
      size_t a = line.find(':');
      size_t b = line.find(':', a + 1);
      if (a == std::string::npos || b == std::string::npos) continue;
      std::string controllers = line.substr(a + 1, b - a - 1);
      std::string path = line.substr(b + 1);
      if (path == "/") path.clear();
      for (const char* c : {"cpu", "memory"}) {
        if (controllers == c) {
          ::rmdir(
              ("/sys/fs/cgroup/" + std::string(c) + path + "/" + config_.cgroup_parent).c_str());
        }
      }
    }
    ::rmdir(("/sys/fs/cgroup/" + config_.cgroup_parent).c_str());  // v2
  }

  Executor& executor() {
    if (!exec_) exec_ = make(&exits_);
    return *exec_;
  }

  std::unique_ptr<Executor> make(ExitLog* log) {
    auto made = newLocalExecutor(config_);
    EXPECT_TRUE(made.isOk()) << made.status().toString();
    if (!made.isOk()) return nullptr;
    std::unique_ptr<Executor> e = std::move(made).value();
    e->setObserver([log](const ReplicaExit& x) { log->add(x); });
    return e;
  }

  LaunchRequest request(std::int64_t job, JobSpec spec, std::vector<std::vector<int>> gpus = {{}}) {
    LaunchRequest r;
    r.key = AttemptKey{JobId(job), 1};
    r.spec = std::move(spec);
    r.spec.replicas = static_cast<int>(gpus.size());
    for (size_t i = 0; i < gpus.size(); ++i) {
      r.replicas.push_back(ReplicaPlacement{"local", gpus[i]});
      std::vector<GpuInfo> infos;
      for (int g : gpus[i]) {
        GpuInfo info;
        info.index = g;
        info.uuid = "GPU-uuid-" + std::to_string(g);
        infos.push_back(info);
      }
      r.replica_gpus.push_back(infos);
    }
    r.master_port = 29500;
    launched_.push_back(r.key);
    return r;
  }

  static JobSpec script(std::string text) {
    JobSpec s;
    s.name = "t";
    s.script = std::move(text);
    return s;
  }

  std::string log(const AttemptKey& key, int replica = 0) {
    auto text = tailLog(RunLayout(config_.data_dir), key, replica, 100000);
    return text.isOk() ? *text : std::string();
  }

  bool waitLog(const AttemptKey& key, const std::string& needle, int replica = 0) {
    return waitFor([&] { return log(key, replica).find(needle) != std::string::npos; });
  }

  std::string file(const AttemptKey& key, int replica, const char* name) {
    return RunLayout(config_.data_dir).file(key, replica, name);
  }

  std::string bin_;
  TempDir data_;
  TempDir work_;
  LocalExecutorConfig config_;
  ExitLog exits_;
  std::unique_ptr<Executor> exec_;
  std::vector<AttemptKey> launched_;
};

std::map<std::string, std::string> parseEnv(const std::string& text) {
  std::map<std::string, std::string> env;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) env[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return env;
}

TEST_F(LocalExecutorTest, EnvironmentIsExactPerReplica) {
  JobSpec spec;
  spec.command = {"/usr/bin/env"};
  spec.env = {{"FOO", "bar"}, {"CUDA_VISIBLE_DEVICES", "9"}};
  LaunchRequest req = request(1, spec, {{2, 3}, {}});
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk()) << res.status().toString();
  ASSERT_EQ(res->started.size(), 2u);
  for (int r = 0; r < 2; ++r) {
    auto e = exits_.wait(req.key, r);
    ASSERT_TRUE(e) << "replica " << r;
    EXPECT_EQ(e->exit_code, 0) << e->message;
    std::map<std::string, std::string> want;
    for (const char* name : {"PATH", "HOME", "LANG"}) {
      if (const char* v = std::getenv(name)) want[name] = v;
    }
    want["FOO"] = "bar";
    want["CUDA_VISIBLE_DEVICES"] = r == 0 ? "2,3" : "";
    want["NVIDIA_VISIBLE_DEVICES"] = r == 0 ? "GPU-uuid-2,GPU-uuid-3" : "void";
    want["TRAINYARD_JOB_ID"] = "1";
    want["TRAINYARD_ATTEMPT"] = "1";
    want["TRAINYARD_REPLICA"] = std::to_string(r);
    want["WORLD_SIZE"] = "2";
    want["RANK"] = std::to_string(r);
    want["LOCAL_RANK"] = std::to_string(r);
    want["LOCAL_WORLD_SIZE"] = "2";
    want["NODE_RANK"] = "0";
    want["MASTER_ADDR"] = "127.0.0.1";
    want["MASTER_PORT"] = "29500";
    want["TRAINYARD_CHECKPOINT_MARK"] = RunLayout(config_.data_dir).checkpointMark(JobId(1));
    EXPECT_EQ(parseEnv(log(req.key, r)), want) << "replica " << r;
  }
}

TEST_F(LocalExecutorTest, EachOneGpuLaunchSeesOnlyItsGpu) {
  LaunchRequest a = request(2, script("echo gpus=$CUDA_VISIBLE_DEVICES"), {{0}});
  LaunchRequest b = request(3, script("echo gpus=$CUDA_VISIBLE_DEVICES"), {{1}});
  ASSERT_TRUE(executor().launch(a).isOk());
  ASSERT_TRUE(executor().launch(b).isOk());
  ASSERT_TRUE(exits_.wait(a.key, 0));
  ASSERT_TRUE(exits_.wait(b.key, 0));
  EXPECT_EQ(log(a.key), "gpus=0\n");
  EXPECT_EQ(log(b.key), "gpus=1\n");
}

TEST_F(LocalExecutorTest, ExtraEnvironmentReachesEveryReplica) {
  config_.extra_env = [](const AttemptKey& key) {
    return std::map<std::string, std::string>{{"TRAINYARD_JOB_TOKEN", "tok-" + key.toString()},
                                              {"TRAINYARD_API_URL", "http://x:1"}};
  };
  LaunchRequest req = request(31, script("echo $TRAINYARD_JOB_TOKEN $TRAINYARD_API_URL"), {{}, {}});
  ASSERT_TRUE(executor().launch(req).isOk());
  for (int r = 0; r < 2; ++r) {
    ASSERT_TRUE(exits_.wait(req.key, r));
    EXPECT_EQ(log(req.key, r), "tok-31.1 http://x:1\n");
  }
}

TEST_F(LocalExecutorTest, MetricLinesAreCopiedToMetricsFileAndStayInTheLog) {
  // A valid report, a bad one, one split over two writes, other output,
  // and a last one without a newline.
  LaunchRequest req = request(32, script("echo 'TRAINYARD_METRIC {\"step\":1,\"loss\":0.5}'\n"
                                         "echo 'TRAINYARD_METRIC {\"loss\":\"bad\"}'\n"
                                         "echo 'epoch 1 done'\n"
                                         "printf 'TRAINYARD_METRIC {\"step\":2,'; sleep 0.2; "
                                         "printf '\"loss\":0.25}\\n'\n"
                                         "printf 'TRAINYARD_METRIC {\"step\":3,\"loss\":0.1}'"));
  ASSERT_TRUE(executor().launch(req).isOk());
  ASSERT_TRUE(exits_.wait(req.key, 0));
  EXPECT_EQ(readText(RunLayout(config_.data_dir).metricsFile(req.key, 0)),
            "TRAINYARD_METRIC {\"step\":1,\"loss\":0.5}\n"
            "TRAINYARD_METRIC {\"step\":2,\"loss\":0.25}\n"
            "TRAINYARD_METRIC {\"step\":3,\"loss\":0.1}\n");
  std::string text = log(req.key);
  EXPECT_NE(text.find("TRAINYARD_METRIC {\"loss\":\"bad\"}\n"), std::string::npos) << text;
  EXPECT_NE(text.find("epoch 1 done\n"), std::string::npos) << text;
  EXPECT_NE(text.find("trainyard: 1 TRAINYARD_METRIC lines were not metrics"), std::string::npos)
      << text;
}

TEST_F(LocalExecutorTest, ExitCodeIsRecorded) {
  LaunchRequest req = request(4, script("echo hi; echo oops >&2; exit 3"));
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk()) << res.status().toString();
  ASSERT_EQ(res->started.size(), 1u);
  EXPECT_GT(res->started[0].pid, 0);
  EXPECT_FALSE(res->started[0].adopted);
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 3);
  EXPECT_EQ(e->signal, 0);
  EXPECT_FALSE(e->lost);
  EXPECT_EQ(e->message, "exited with code 3");
  EXPECT_EQ(readText(file(req.key, 0, RunLayout::kExitFile)), "3 0\n");
  EXPECT_EQ(log(req.key), "hi\noops\n");
}

TEST_F(LocalExecutorTest, SignalGives128PlusSignal) {
  LaunchRequest req = request(5, script("echo ready; exec sleep 30"));
  ASSERT_TRUE(executor().launch(req).isOk());
  ASSERT_TRUE(waitLog(req.key, "ready"));
  ASSERT_TRUE(executor().signal(req.key, SIGTERM).isOk());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 128 + SIGTERM);
  EXPECT_EQ(e->signal, SIGTERM);
  EXPECT_EQ(e->message, "killed by SIGTERM");
}

TEST_F(LocalExecutorTest, TermThenKillLeavesNoSurvivorInTheTree) {
  // Every process of the tree ignores SIGTERM, so only SIGKILL ends it.
  const std::string w = work_.path();
  JobSpec spec = script(
      "trap '' TERM\n"
      "sh -c 'sleep 1000 & echo $! > gc1; sleep 1000 & echo $! > gc2; wait' &\n"
      "echo $! > child1\n"
      "sleep 1000 &\n"
      "echo $! > child2\n"
      "while [ ! -s gc2 ]; do sleep 0.01; done\n"
      "echo ready\n"
      "wait\n");
  spec.workdir = w;
  LaunchRequest req = request(6, spec);
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk());
  ASSERT_TRUE(waitLog(req.key, "ready"));
  std::vector<pid_t> tree = {static_cast<pid_t>(res->started[0].pid)};
  for (const char* f : {"child1", "child2", "gc1", "gc2"}) {
    pid_t p = static_cast<pid_t>(std::stol(readText(w + "/" + f)));
    ASSERT_TRUE(processAlive(p)) << f;
    tree.push_back(p);
  }
  ASSERT_TRUE(executor().signal(req.key, SIGTERM).isOk());
  // The TERM was delivered (the supervisor too ignores it) and changed
  // nothing: everything still runs.
  for (pid_t p : tree) EXPECT_TRUE(processAlive(p)) << p;
  EXPECT_EQ(exits_.count(), 0u);
  ASSERT_TRUE(executor().signal(req.key, SIGKILL).isOk());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 137);
  EXPECT_EQ(e->signal, SIGKILL);
  EXPECT_EQ(e->message, "killed by SIGKILL");
  for (pid_t p : tree) {
    EXPECT_TRUE(waitFor([p] { return !processAlive(p); }, 5000)) << "survivor " << p;
  }
  // Recorded, so a restarted server reports the same.
  EXPECT_EQ(readText(file(req.key, 0, RunLayout::kExitFile)), "137 9\n");
}

TEST_F(LocalExecutorTest, TermDefaultKillsTreeAndGrandchildren) {
  const std::string w = work_.path();
  JobSpec spec = script(
      "sh -c 'sleep 1000 & echo $! > gc; wait' &\n"
      "while [ ! -s gc ]; do sleep 0.01; done\n"
      "echo ready\n"
      "wait\n");
  spec.workdir = w;
  LaunchRequest req = request(7, spec);
  ASSERT_TRUE(executor().launch(req).isOk());
  ASSERT_TRUE(waitLog(req.key, "ready"));
  pid_t gc = static_cast<pid_t>(std::stol(readText(w + "/gc")));
  ASSERT_TRUE(executor().signal(req.key, SIGTERM).isOk());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->signal, SIGTERM);
  EXPECT_TRUE(waitFor([gc] { return !processAlive(gc); }, 5000));
}

TEST_F(LocalExecutorTest, TrappedTermRunsCheckpointBeforeGraceEnds) {
  JobSpec spec = script(
      "trap 'echo checkpoint saved; exit 0' TERM\n"
      "echo ready\n"
      "while :; do sleep 0.05; done\n");
  LaunchRequest req = request(8, spec);
  ASSERT_TRUE(executor().launch(req).isOk());
  ASSERT_TRUE(waitLog(req.key, "ready"));
  ASSERT_TRUE(executor().signal(req.key, SIGTERM).isOk());
  // A 5 s grace period: the handler finishes within it, no SIGKILL needed.
  auto e = exits_.wait(req.key, 0, 5000);
  ASSERT_TRUE(e) << "still running when the grace period ended";
  EXPECT_EQ(e->exit_code, 0) << e->message;
  EXPECT_NE(log(req.key).find("checkpoint saved"), std::string::npos);
}

TEST_F(LocalExecutorTest, SecondLaunchInSameInstanceAdopts) {
  LaunchRequest req = request(9, script("echo started; exec sleep 30"));
  auto first = executor().launch(req);
  ASSERT_TRUE(first.isOk());
  auto second = executor().launch(req);
  ASSERT_TRUE(second.isOk()) << second.status().toString();
  ASSERT_EQ(second->started.size(), 1u);
  EXPECT_TRUE(second->started[0].adopted);
  EXPECT_EQ(second->started[0].pid, first->started[0].pid);
}

TEST_F(LocalExecutorTest, RestartedExecutorAdoptsRunningReplica) {
  const std::string w = work_.path();
  JobSpec spec = script("echo started; while [ ! -e go ]; do sleep 0.02; done; exit 5");
  spec.workdir = w;
  LaunchRequest req = request(10, spec);
  ExitLog first_log;
  auto first = make(&first_log);
  auto res1 = first->launch(req);
  ASSERT_TRUE(res1.isOk());
  ASSERT_TRUE(waitLog(req.key, "started"));
  first.reset();  // the server goes away; the replica keeps running

  auto res2 = executor().launch(req);
  ASSERT_TRUE(res2.isOk()) << res2.status().toString();
  ASSERT_EQ(res2->started.size(), 1u);
  EXPECT_TRUE(res2->started[0].adopted);
  EXPECT_EQ(res2->started[0].pid, res1->started[0].pid);
  EXPECT_TRUE(processAlive(static_cast<pid_t>(res2->started[0].pid)));
  ::ty::testing::writeText(w + "/go", "");
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 5);
  EXPECT_EQ(log(req.key), "started\n");  // ran once
  EXPECT_EQ(first_log.count(), 0u);
}

TEST_F(LocalExecutorTest, ExitWhileNobodyWatchedIsReportedFromRecord) {
  const std::string w = work_.path();
  JobSpec spec = script("while [ ! -e go ]; do sleep 0.02; done; exit 4");
  spec.workdir = w;
  LaunchRequest req = request(11, spec);
  ExitLog first_log;
  auto first = make(&first_log);
  ASSERT_TRUE(first->launch(req).isOk());
  first.reset();
  ::ty::testing::writeText(w + "/go", "");
  // The supervisor records the exit and then goes away; wait until it has.
  const std::string exit_file = file(req.key, 0, RunLayout::kExitFile);
  ASSERT_TRUE(waitFor([&] { return sys::fileExists(exit_file); }));
  pid_t sup = static_cast<pid_t>(std::stol(readText(file(req.key, 0, RunLayout::kPidFile))));
  ASSERT_TRUE(waitFor([sup] { return !processAlive(sup); }));
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk());
  EXPECT_TRUE(res->started.empty());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 4);
  EXPECT_FALSE(e->lost);
}

TEST_F(LocalExecutorTest, LaunchedWithoutSupervisorOrRecordIsLost) {
  LaunchRequest req = request(12, script("echo never"));
  RunLayout layout(config_.data_dir);
  ASSERT_TRUE(sys::makeDirs(layout.replicaDir(req.key, 0)).isOk());
  ::ty::testing::writeText(layout.file(req.key, 0, RunLayout::kLaunchedFile), "");
  ::ty::testing::writeText(layout.file(req.key, 0, RunLayout::kPidFile), "999999 1\n");
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk());
  EXPECT_TRUE(res->started.empty());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_TRUE(e->lost);
  EXPECT_EQ(e->message.rfind("lost: ", 0), 0u) << e->message;
  EXPECT_EQ(log(req.key), "");  // it did not run
}

// Marked but never started (the server died between the marker and the
// fork): the supervisor had not written its pid, so nothing ran and the
// replica starts afresh instead of failing as lost.
TEST_F(LocalExecutorTest, LaunchedMarkerWithoutPidStartsAfresh) {
  LaunchRequest req = request(21, script("echo ran"));
  RunLayout layout(config_.data_dir);
  ASSERT_TRUE(sys::makeDirs(layout.replicaDir(req.key, 0)).isOk());
  ::ty::testing::writeText(layout.file(req.key, 0, RunLayout::kLaunchedFile), "");
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk());
  ASSERT_EQ(res->started.size(), 1u);
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_FALSE(e->lost);
  EXPECT_EQ(e->exit_code, 0);
  EXPECT_EQ(log(req.key), "ran\n");
}

TEST_F(LocalExecutorTest, LogRotationCapsSizeAndFileCount) {
  config_.log_max_bytes = 1000;
  config_.log_max_files = 3;
  LaunchRequest req =
      request(13, script("i=0; while [ $i -lt 500 ]; do echo \"line $i\"; i=$((i+1)); done"));
  ASSERT_TRUE(executor().launch(req).isOk());
  ASSERT_TRUE(exits_.wait(req.key, 0));
  const std::string dir = RunLayout(config_.data_dir).replicaDir(req.key, 0);
  EXPECT_LE(readText(RunLayout::logPath(dir, 0)).size(), 1000u);
  EXPECT_EQ(readText(RunLayout::logPath(dir, 1)).size(), 1000u);
  EXPECT_EQ(readText(RunLayout::logPath(dir, 2)).size(), 1000u);
  EXPECT_FALSE(sys::fileExists(RunLayout::logPath(dir, 3)));
  EXPECT_EQ(log(req.key).size() > 0, true);
  auto tail = tailLog(RunLayout(config_.data_dir), req.key, 0, 3);
  ASSERT_TRUE(tail.isOk());
  EXPECT_EQ(*tail, "line 497\nline 498\nline 499\n");
  // 200 lines span the rotated files.
  auto more = tailLog(RunLayout(config_.data_dir), req.key, 0, 200);
  ASSERT_TRUE(more.isOk());
  std::string want;
  for (int i = 300; i < 500; ++i) want += "line " + std::to_string(i) + "\n";
  EXPECT_EQ(*more, want);
}

TEST_F(LocalExecutorTest, MissingWorkdirFailsTheReplicaWith127) {
  JobSpec spec = script("echo hi");
  spec.workdir = "/nonexistent/trainyard-workdir";
  LaunchRequest req = request(14, spec);
  ASSERT_TRUE(executor().launch(req).isOk());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 127);
  EXPECT_NE(log(req.key).find("cannot change to workdir /nonexistent/trainyard-workdir"),
            std::string::npos)
      << log(req.key);
}

TEST_F(LocalExecutorTest, MissingProgramFailsTheReplicaWith127) {
  JobSpec spec;
  spec.command = {"trainyard-no-such-program", "--flag"};
  LaunchRequest req = request(15, spec);
  ASSERT_TRUE(executor().launch(req).isOk());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 127);
  EXPECT_NE(log(req.key).find("cannot run trainyard-no-such-program"), std::string::npos);
}

TEST_F(LocalExecutorTest, ArgvIsPassedWithoutAShell) {
  JobSpec spec;
  spec.command = {"/bin/echo", "a b", "$HOME", "'q'", ";", "*"};
  LaunchRequest req = request(16, spec);
  ASSERT_TRUE(executor().launch(req).isOk());
  ASSERT_TRUE(exits_.wait(req.key, 0));
  EXPECT_EQ(log(req.key), "a b $HOME 'q' ; *\n");
}

TEST_F(LocalExecutorTest, BadSupervisorCommandFailsLaunchAndLeavesNoMarker) {
  config_.supervisor_command = {"/nonexistent/trainyard", "__supervise"};
  LaunchRequest req = request(17, script("true"));
  auto res = executor().launch(req);
  ASSERT_FALSE(res.isOk());
  EXPECT_NE(res.status().message().find("start supervisor"), std::string::npos)
      << res.status().toString();
  EXPECT_FALSE(sys::fileExists(file(req.key, 0, RunLayout::kLaunchedFile)));
}

TEST_F(LocalExecutorTest, ImageWithoutPodmanFailsLaunch) {
  config_.container.podman = "/nonexistent/podman";
  JobSpec spec = script("true");
  spec.image = "localhost/whatever:1";
  LaunchRequest req = request(18, spec);
  auto res = executor().launch(req);
  ASSERT_FALSE(res.isOk());
  EXPECT_EQ(res.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(res.status().message(),
            "image set but podman is not installed: install podman or remove `image`");
}

TEST_F(LocalExecutorTest, CgroupLimitsAreApplied) {
  JobSpec spec = script("echo ready; exec sleep 30");
  spec.resources.cpus = Quantity::fromMilli(500);
  spec.resources.memory_bytes = 64ll << 20;
  LaunchRequest req = request(19, spec);
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk()) << res.status().toString();
  if (!res->warnings.empty()) GTEST_SKIP() << res->warnings[0];
  ASSERT_TRUE(waitLog(req.key, "ready"));
  std::string listed = readText(file(req.key, 0, RunLayout::kCgroupsFile));
  std::istringstream in(listed);
  std::string dir;
  std::set<std::string> checked;
  pid_t sup = static_cast<pid_t>(res->started[0].pid);
  while (std::getline(in, dir)) {
    EXPECT_NE(dir.find(config_.cgroup_parent + "/" +
                       containerName(instanceTag(config_.data_dir), req.key, 0)),
              std::string::npos)
        << dir;
    if (sys::fileExists(dir + "/cpu.cfs_quota_us")) {
      EXPECT_EQ(readText(dir + "/cpu.cfs_quota_us"), "50000\n");
      EXPECT_EQ(readText(dir + "/cpu.cfs_period_us"), "100000\n");
      checked.insert("cpu");
    }
    if (sys::fileExists(dir + "/memory.limit_in_bytes")) {
      EXPECT_EQ(readText(dir + "/memory.limit_in_bytes"), "67108864\n");
      checked.insert("memory");
    }
    if (sys::fileExists(dir + "/cpu.max")) {
      EXPECT_EQ(readText(dir + "/cpu.max"), "50000 100000\n");
      checked.insert("cpu");
    }
    if (sys::fileExists(dir + "/memory.max")) {
      EXPECT_EQ(readText(dir + "/memory.max"), "67108864\n");
      checked.insert("memory");
    }
    std::string procs = readText(dir + "/cgroup.procs");
    EXPECT_NE(procs.find(std::to_string(sup) + "\n"), std::string::npos) << dir << ": " << procs;
  }
  EXPECT_EQ(checked, (std::set<std::string>{"cpu", "memory"}));
  ASSERT_TRUE(executor().signal(req.key, SIGKILL).isOk());
  ASSERT_TRUE(exits_.wait(req.key, 0));
  executor().release(req.key);
  std::istringstream again(listed);
  while (std::getline(again, dir)) EXPECT_FALSE(sys::fileExists(dir)) << dir;
}

TEST_F(LocalExecutorTest, ReleaseKillsProcessesThatLeftTheGroup) {
  const std::string w = work_.path();
  JobSpec spec = script("setsid sleep 1000 & echo $! > escaped; exit 0");
  spec.workdir = w;
  LaunchRequest req = request(20, spec);
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk());
  auto e = exits_.wait(req.key, 0);
  ASSERT_TRUE(e);
  if (!sys::fileExists(file(req.key, 0, RunLayout::kCgroupsFile))) {
    GTEST_SKIP() << "cgroups not writable here";
  }
  pid_t escaped = static_cast<pid_t>(std::stol(readText(w + "/escaped")));
  // It left the process group, so the supervisor's group kill missed it.
  EXPECT_TRUE(processAlive(escaped));
  executor().release(req.key);
  EXPECT_TRUE(waitFor([escaped] { return !processAlive(escaped); }, 5000));
}

TEST_F(LocalExecutorTest, SignalForUnknownAttemptIsIgnored) {
  EXPECT_TRUE(executor().signal(AttemptKey{JobId(999), 1}, SIGTERM).isOk());
  executor().release(AttemptKey{JobId(999), 1});
}

// Builds localhost/ty-test:busybox from busybox-static; empty when podman
// or a static busybox is missing (the reason is in *why).
std::string buildBusyboxImage(std::string* why) {
  const char* path = std::getenv("PATH");
  if (!sys::findExecutable("podman", path ? path : "").isOk()) {
    *why = "podman is not installed";
    return {};
  }
  std::string busybox;
  for (const char* p : {"/bin/busybox", "/usr/bin/busybox"}) {
    if (sys::fileExists(p)) busybox = p;
  }
  if (busybox.empty()) {
    *why = "busybox-static is not installed";
    return {};
  }
  TempDir root;
  std::string bin = root.path() + "/bin";
  if (!sys::makeDirs(bin).isOk()) return {};
  auto copied = sys::runCommand({"cp", busybox, bin + "/busybox"}, 10'000);
  if (!copied.isOk() || *copied != 0) {
    *why = "cannot copy busybox";
    return {};
  }
  for (const char* tool : {"sh", "echo", "cat", "env", "sleep", "true"}) {
    if (::symlink("busybox", (bin + "/" + tool).c_str()) != 0) return {};
  }
  const std::string image = "localhost/ty-test:busybox";
  std::string cmd =
      "tar -C " + root.path() + " -c . | podman import - " + image + " >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    *why = "podman import failed";
    return {};
  }
  return image;
}

// Built once per test run.
std::string busyboxImage(std::string* why) {
  static std::string reason;
  static const std::string image = buildBusyboxImage(&reason);
  *why = reason;
  return image;
}

TEST_F(LocalExecutorTest, PodmanContainerRunsWithOutputAndExitCode) {
  std::string why;
  const std::string image = busyboxImage(&why);
  if (image.empty()) GTEST_SKIP() << why;
  JobSpec spec =
      script("echo hello from replica $RANK of $WORLD_SIZE gpus=[$CUDA_VISIBLE_DEVICES]; exit 3");
  spec.image = image;
  spec.env = {{"GREETING", "hi there"}};
  LaunchRequest req = request(30, spec);
  auto res = executor().launch(req);
  ASSERT_TRUE(res.isOk()) << res.status().toString();
  auto e = exits_.wait(req.key, 0, 30'000);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 3) << log(req.key);
  EXPECT_NE(log(req.key).find("hello from replica 0 of 1 gpus=[]"), std::string::npos)
      << log(req.key);
  EXPECT_EQ(readText(file(req.key, 0, RunLayout::kContainerFile)),
            containerName(instanceTag(config_.data_dir), req.key, 0));
  executor().release(req.key);
}

TEST_F(LocalExecutorTest, PodmanContainerIsKilledBySignal) {
  std::string why;
  const std::string image = busyboxImage(&why);
  if (image.empty()) GTEST_SKIP() << why;
  JobSpec spec = script("echo ready; sleep 1000");
  spec.image = image;
  LaunchRequest req = request(31, spec);
  ASSERT_TRUE(executor().launch(req).isOk());
  ASSERT_TRUE(waitLog(req.key, "ready"));
  ASSERT_TRUE(executor().signal(req.key, SIGKILL).isOk());
  auto e = exits_.wait(req.key, 0, 30'000);
  ASSERT_TRUE(e);
  EXPECT_EQ(e->exit_code, 137);
  executor().release(req.key);
  // Neither the podman client nor the container (run by conmon) is left.
  auto rc = sys::runCommand({"podman", "container", "exists", "ty-31-1-0"}, 15'000);
  ASSERT_TRUE(rc.isOk());
  EXPECT_EQ(*rc, 1) << "container ty-31-1-0 still exists";
}

TEST(PickFreeTcpPortTest, ReturnsABindablePort) {
  auto port = pickFreeTcpPort();
  ASSERT_TRUE(port.isOk()) << port.status().toString();
  EXPECT_GT(*port, 0);
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(*port));
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ::close(fd);
}

}  // namespace
}  // namespace ty
