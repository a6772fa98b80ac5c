// Jobs through their life: waiting and why, GPU isolation and the
// distributed environment, cancel and its signals, max_runtime, retries,
// and logs.
#include <atomic>
#include <mutex>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "harness.h"

namespace ty::e2e {
namespace {

class JobsTest : public E2eTest {};

std::string cancelPath(std::int64_t id) { return "/api/v1/jobs/" + std::to_string(id) + "/cancel"; }

// "KEY=value" pairs from a line of `echo A=1 B=2` output.
std::map<std::string, std::string> parsePairs(const std::string& text, const std::string& tag) {
  std::map<std::string, std::string> out;
  for (const auto& line : splitLines(text)) {
    if (line.rfind(tag + " ", 0) != 0) continue;
    std::stringstream ss(line.substr(tag.size() + 1));
    for (std::string kv; ss >> kv;) {
      auto eq = kv.find('=');
      if (eq != std::string::npos) out[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  return out;
}

constexpr const char* kPrintEnv =
    "echo ENV CVD=[$CUDA_VISIBLE_DEVICES] RANK=$RANK WORLD_SIZE=$WORLD_SIZE "
    "MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT JOB=$TRAINYARD_JOB_ID; ";

TEST_F(JobsTest, SecondJobWaitsWithReasonAndStartsAfterCancel) {
  Json first = scriptJob("sleep 30", 4);
  std::int64_t a = api().submit(first);
  ASSERT_GT(a, 0);
  ASSERT_TRUE(api().waitState(a, "running"));

  std::int64_t b = api().submit(scriptJob("echo second", 4));
  ASSERT_GT(b, 0);
  const std::string want = "Waiting: needs 4 GPUs, 0 free on node local";
  Json waiting;
  ASSERT_TRUE(waitFor(
      [&] {
        waiting = api().job(b);
        return waiting.value("reason", "") == want && waiting.contains("waiting");
      },
      10s))
      << waiting.dump();
  EXPECT_EQ(waiting.value("state", ""), "pending");
  EXPECT_EQ(waiting["waiting"].value("position", 0), 1) << waiting.dump();
  EXPECT_EQ(waiting["waiting"].value("message", ""), want);
  EXPECT_TRUE(anyContains(api().eventLines(b), "Waiting: " + want));

  HttpResult r = api().post(cancelPath(a), "");
  EXPECT_EQ(r.status, 200) << r.body;
  Json done_a = api().waitDone(a);
  EXPECT_EQ(done_a.value("state", ""), "cancelled");
  Json done_b = api().waitDone(b);
  EXPECT_EQ(done_b.value("state", ""), "succeeded") << joinLines(api().eventLines(b));
  EXPECT_TRUE(anyContains(api().eventLines(b), "Placed on local, GPUs 0,1,2,3"))
      << joinLines(api().eventLines(b));
}

TEST_F(JobsTest, GpuJobsAreIsolatedAndSeeTheirEnvironment) {
  const std::string gate = tmp_.sub("gate");
  std::string script = std::string(kPrintEnv) + "while [ ! -f \"$GATE\" ]; do sleep 0.05; done";
  std::vector<std::int64_t> ids;
  for (int gpus : {1, 1, 0}) {
    Json spec = scriptJob(script, gpus);
    spec["env"]["GATE"] = gate;
    ids.push_back(api().submit(spec));
    ASSERT_GT(ids.back(), 0);
  }
  // All three run at the same time, holding their GPUs.
  for (auto id : ids) {
    ASSERT_TRUE(waitFor([&] { return api().logs(id).find("ENV ") != std::string::npos; }, 10s))
        << "job " << id << ": " << api().logs(id);
  }
  writeFile(gate, "go\n");
  std::vector<std::map<std::string, std::string>> env;
  for (auto id : ids) {
    EXPECT_EQ(api().waitDone(id).value("state", ""), "succeeded");
    env.push_back(parsePairs(api().logs(id), "ENV"));
  }
  std::regex one_gpu(R"(\[[0-3]\])");
  EXPECT_TRUE(std::regex_match(env[0]["CVD"], one_gpu)) << env[0]["CVD"];
  EXPECT_TRUE(std::regex_match(env[1]["CVD"], one_gpu)) << env[1]["CVD"];
  EXPECT_NE(env[0]["CVD"], env[1]["CVD"]);
  EXPECT_EQ(env[2]["CVD"], "[]");
  for (size_t i = 0; i < ids.size(); ++i) {
    EXPECT_EQ(env[i]["RANK"], "0");
    EXPECT_EQ(env[i]["WORLD_SIZE"], "1");
    EXPECT_EQ(env[i]["JOB"], std::to_string(ids[i]));
    EXPECT_FALSE(env[i]["MASTER_PORT"].empty());
  }
}

TEST_F(JobsTest, ReplicasGetRanksAndDistinctGpus) {
  Json spec = scriptJob(kPrintEnv, 1);
  spec["replicas"] = 2;
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  Json done = api().waitDone(id);
  EXPECT_EQ(done.value("state", ""), "succeeded") << joinLines(api().eventLines(id));
  auto r0 = parsePairs(api().logs(id, 0), "ENV");
  auto r1 = parsePairs(api().logs(id, 1), "ENV");
  EXPECT_EQ(r0["RANK"], "0");
  EXPECT_EQ(r1["RANK"], "1");
  EXPECT_EQ(r0["WORLD_SIZE"], "2");
  EXPECT_EQ(r1["WORLD_SIZE"], "2");
  EXPECT_FALSE(r0["MASTER_ADDR"].empty());
  EXPECT_EQ(r0["MASTER_ADDR"], r1["MASTER_ADDR"]);
  EXPECT_FALSE(r0["MASTER_PORT"].empty());
  EXPECT_EQ(r0["MASTER_PORT"], r1["MASTER_PORT"]);
  std::regex one_gpu(R"(\[[0-3]\])");
  EXPECT_TRUE(std::regex_match(r0["CVD"], one_gpu)) << r0["CVD"];
  EXPECT_TRUE(std::regex_match(r1["CVD"], one_gpu)) << r1["CVD"];
  EXPECT_NE(r0["CVD"], r1["CVD"]);
  EXPECT_EQ(api().get("/api/v1/jobs/" + std::to_string(id) + "/logs?replica=2").status, 400);
}

TEST_F(JobsTest, CancelKillsTheWholeProcessTree) {
  const std::string pids = tmp_.sub("pids");
  // The shell, a child, and a grandchild whose parent has already exited.
  Json spec = scriptJob(
      "echo $$ >> \"$PIDS\"; sleep 300 & echo $! >> \"$PIDS\"; "
      "(sleep 300 & echo $! >> \"$PIDS\"); echo ready >> \"$PIDS\"; wait");
  spec["env"]["PIDS"] = pids;
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor([&] { return readFile(pids).find("ready") != std::string::npos; }, 10s));
  std::vector<pid_t> recorded;
  for (const auto& line : splitLines(readFile(pids))) {
    if (line != "ready") recorded.push_back(std::atoi(line.c_str()));
  }
  ASSERT_EQ(recorded.size(), 3u) << readFile(pids);
  for (pid_t p : recorded) ASSERT_TRUE(processAlive(p)) << p;

  HttpResult r = api().post(cancelPath(id), "");
  EXPECT_EQ(r.status, 200) << r.body;
  Json done = api().waitDone(id);
  EXPECT_EQ(done.value("state", ""), "cancelled");
  std::vector<pid_t> alive;
  bool all_dead = waitFor(
      [&] {
        alive.clear();
        for (pid_t p : recorded) {
          if (processAlive(p)) alive.push_back(p);
        }
        return alive.empty();
      },
      5s);
  EXPECT_TRUE(all_dead) << "still alive after cancel:\n" << describeProcesses(alive);
  expectNoLeftoverProcesses();
}

TEST_F(JobsTest, CancelGivesTheGracePeriodForACheckpoint) {
  const std::string ckpt = tmp_.sub("checkpoint");
  Json spec = scriptJob(
      "trap 'echo saving; echo saved > \"$CKPT\"; exit 0' TERM; echo ready; "
      "while true; do sleep 0.1; done");
  spec["env"]["CKPT"] = ckpt;
  spec["grace_period"] = "5s";
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor([&] { return api().logs(id).find("ready") != std::string::npos; }, 10s));
  EXPECT_EQ(api().post(cancelPath(id), "").status, 200);
  Json done = api().waitDone(id);
  auto events = api().eventLines(id);
  EXPECT_EQ(done.value("state", ""), "cancelled") << joinLines(events);
  EXPECT_EQ(readFile(ckpt), "saved\n");
  EXPECT_NE(api().logs(id).find("saving"), std::string::npos);
  EXPECT_FALSE(anyContains(events, "SIGKILL:")) << joinLines(events);
  EXPECT_FALSE(anyContains(events, "Killing")) << joinLines(events);
}

TEST_F(JobsTest, JobIgnoringSigtermIsKilledAfterGracePeriod) {
  Json spec = scriptJob("trap '' TERM; echo ready; while true; do sleep 0.1; done");
  spec["grace_period"] = "1s";
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor([&] { return api().logs(id).find("ready") != std::string::npos; }, 10s));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(api().post(cancelPath(id), "").status, 200);
  Json done = api().waitDone(id);
  auto took = std::chrono::steady_clock::now() - t0;
  auto events = api().eventLines(id);
  EXPECT_EQ(done.value("state", ""), "cancelled") << joinLines(events);
  EXPECT_GE(took, 900ms) << "killed before the grace period was over";
  EXPECT_TRUE(anyContains(events, "Killing: Grace period of 1s is over: sending SIGKILL"))
      << joinLines(events);
  EXPECT_TRUE(anyContains(events, "SIGKILL")) << joinLines(events);
  expectNoLeftoverProcesses();
}

TEST_F(JobsTest, MaxRuntimeFailsTheJob) {
  Json spec = scriptJob("sleep 30");
  spec["max_runtime"] = "1s";
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  Json done = api().waitDone(id, 15s);
  EXPECT_EQ(done.value("state", ""), "failed");
  EXPECT_NE(done.value("reason", "").find("exceeded max_runtime"), std::string::npos)
      << done.dump();
  expectNoLeftoverProcesses();
}

TEST_F(JobsTest, RetriesUntilTheLimitThenFails) {
  Json spec = scriptJob("echo attempt $TRAINYARD_ATTEMPT; exit 3");
  spec["retries"] = {{"limit", 2}, {"backoff", "100ms"}};
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  Json done = api().waitDone(id, 20s);
  auto events = api().eventLines(id);
  EXPECT_EQ(done.value("state", ""), "failed") << joinLines(events);
  EXPECT_EQ(done["exit_code"], 3);
  EXPECT_EQ(done.value("attempts", 0), 3);
  EXPECT_EQ(api().attempts(id).size(), 3u);
  EXPECT_TRUE(anyContains(events, "retry 1 of 2")) << joinLines(events);
  EXPECT_TRUE(anyContains(events, "retry 2 of 2")) << joinLines(events);
  EXPECT_NE(api().logs(id).find("attempt 3"), std::string::npos) << api().logs(id);
  HttpResult first = api().get("/api/v1/jobs/" + std::to_string(id) + "/logs?attempt=1");
  EXPECT_EQ(first.status, 200);
  EXPECT_NE(first.body.find("attempt 1"), std::string::npos) << first.body;
}

TEST_F(JobsTest, RetrySucceedsOnSecondAttempt) {
  Json spec = scriptJob("[ \"$TRAINYARD_ATTEMPT\" -ge 2 ] || exit 1; echo ok");
  spec["retries"] = {{"limit", 2}, {"backoff", "100ms"}};
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  Json done = api().waitDone(id, 20s);
  auto events = api().eventLines(id);
  EXPECT_EQ(done.value("state", ""), "succeeded") << joinLines(events);
  EXPECT_EQ(done.value("attempts", 0), 2);
  EXPECT_EQ(api().attempts(id).size(), 2u);
  EXPECT_EQ(done["exit_code"], 0);
}

TEST_F(JobsTest, CancelDuringRetryBackoffCancelsAtOnce) {
  Json spec = scriptJob("exit 1");
  spec["retries"] = {{"limit", 3}, {"backoff", "30s"}};
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);
  ASSERT_TRUE(waitFor(
      [&] { return api().job(id).value("reason", "").find("retry 1 of 3") != std::string::npos; },
      10s))
      << api().job(id).dump();
  EXPECT_EQ(api().state(id), "pending");
  HttpResult r = api().post(cancelPath(id), "");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json.value("state", ""), "cancelled") << r.body;
  Json done = api().waitDone(id, 5s);
  EXPECT_EQ(done.value("state", ""), "cancelled");
  EXPECT_EQ(done.value("attempts", 0), 1);
}

TEST_F(JobsTest, CancelOfPendingJobIsImmediate) {
  std::int64_t a = api().submit(scriptJob("sleep 30", 4));
  ASSERT_GT(a, 0);
  ASSERT_TRUE(api().waitState(a, "running"));
  std::int64_t b = api().submit(scriptJob("echo never", 4));
  ASSERT_GT(b, 0);
  HttpResult r = api().post(cancelPath(b), "");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json.value("state", ""), "cancelled") << r.body;
  EXPECT_EQ(api().job(b).value("attempts", -1), 0);
  // A second cancel finds it finished: 409.
  EXPECT_EQ(api().post(cancelPath(b), "").status, 409);
  EXPECT_EQ(api().post(cancelPath(a), "").status, 200);
  EXPECT_EQ(api().waitDone(a).value("state", ""), "cancelled");
}

TEST_F(JobsTest, LogTailReturnsExactlyTheLastLines) {
  std::int64_t id =
      api().submit(scriptJob("i=1; while [ $i -le 10 ]; do echo line-$i; i=$((i+1)); done"));
  ASSERT_GT(id, 0);
  api().waitDone(id);
  HttpResult r = api().get("/api/v1/jobs/" + std::to_string(id) + "/logs?tail=3");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "line-8\nline-9\nline-10\n");
  r = api().get("/api/v1/jobs/" + std::to_string(id) + "/logs?tail=0");
  EXPECT_EQ(r.body, "");
  r = api().get("/api/v1/jobs/" + std::to_string(id) + "/logs");
  EXPECT_EQ(splitLines(r.body).size(), 10u) << r.body;
}

TEST_F(JobsTest, LogFollowStreamsLinesLive) {
  const std::string gate = tmp_.sub("gate");
  Json spec = scriptJob("echo ready; while [ ! -f \"$GATE\" ]; do sleep 0.05; done; echo finished");
  spec["env"]["GATE"] = gate;
  std::int64_t id = api().submit(spec);
  ASSERT_GT(id, 0);

  std::mutex mu;
  std::string received;
  int status = 0;
  std::atomic<bool> ended{false};
  std::thread reader([&] {
    httplib::Client c(server_->url());
    c.set_bearer_token_auth(server_->adminToken());
    c.set_read_timeout(30, 0);
    auto res = c.Get(
        "/api/v1/jobs/" + std::to_string(id) + "/logs?follow=true",
        [&](const httplib::Response& r) {
          std::lock_guard lock(mu);
          status = r.status;
          return true;
        },
        [&](const char* d, size_t n) {
          std::lock_guard lock(mu);
          received.append(d, n);
          return true;
        });
    ended = true;
  });
  bool got_ready = waitFor(
      [&] {
        std::lock_guard lock(mu);
        return received.find("ready\n") != std::string::npos;
      },
      10s);
  // Seen while the job still runs: it waits for the gate.
  EXPECT_TRUE(got_ready);
  EXPECT_FALSE(ended.load()) << "the stream ended before the job did";
  EXPECT_FALSE(isTerminalState(api().state(id)));
  writeFile(gate, "go\n");
  bool stream_ended = waitFor([&] { return ended.load(); }, 15s);
  if (!stream_ended) server_->kill();  // unblocks the reader
  reader.join();
  EXPECT_TRUE(stream_ended) << "follow did not return after the job ended";
  EXPECT_EQ(status, 200);
  EXPECT_EQ(received, "ready\nfinished\n");
  EXPECT_EQ(api().state(id), server_->running() ? "succeeded" : "");
}

TEST_F(JobsTest, LogsSurviveAServerRestart) {
  std::int64_t id = api().submit(scriptJob("echo before-restart; echo second-line"));
  ASSERT_GT(id, 0);
  api().waitDone(id);
  EXPECT_EQ(server_->stop(), 0) << "SIGTERM should stop the server cleanly";
  ASSERT_TRUE(server_->start());
  EXPECT_EQ(api().state(id), "succeeded");
  EXPECT_EQ(api().logs(id), "before-restart\nsecond-line\n");
  HttpResult r = api().get("/api/v1/jobs/" + std::to_string(id) + "/logs?follow=true");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "before-restart\nsecond-line\n");
}

}  // namespace
}  // namespace ty::e2e

namespace ty::e2e {
namespace {

// Two servers on one machine (over different data dirs) both have a job 1;
// the end of one must not touch the other's processes.
TEST_F(JobsTest, TwoServersDoNotTouchEachOthersJobs) {
  TempDir other_tmp;
  ServerProcess other(other_tmp.sub("data"), other_tmp.sub("server.log"));
  ASSERT_TRUE(other.start());
  std::int64_t mine = api().submit(scriptJob("echo ready; sleep 2; echo done"));
  ASSERT_EQ(mine, 1);
  ASSERT_TRUE(waitFor([&] { return api().logs(mine).find("ready") != std::string::npos; }, 10s));
  Json quick = {{"command", {"true"}}, {"env", {{kMarkerEnv, other_tmp.path()}}}};
  std::int64_t theirs = other.api().submit(quick);
  ASSERT_EQ(theirs, 1);
  EXPECT_EQ(other.api().waitDone(theirs).value("state", ""), "succeeded");
  Json done = api().waitDone(mine);
  auto events = api().eventLines(mine);
  EXPECT_EQ(done.value("state", ""), "succeeded") << joinLines(events);
  EXPECT_EQ(api().logs(mine), "ready\ndone\n") << joinLines(events);
  other.kill();
}

}  // namespace
}  // namespace ty::e2e
