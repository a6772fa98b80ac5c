// The scheduler's policy through the real server and real processes:
// preemption that lets a job checkpoint and resume, queues with quotas
// explained by `trainyard queue` and `describe`, and shares of one GPU.
#include <regex>

#include "harness.h"

namespace ty::e2e {
namespace {

constexpr const char* kConfig = R"(scheduler:
  queues:
    - name: vision
      cohort: lab
      quota:
        gpu: {nominal: 2, borrowing_limit: 0}
    - name: nlp
      cohort: lab
      quota:
        gpu: {nominal: 2}
    - name: default
      quota:
        gpu: {nominal: 4}
)";

class SchedulingTest : public E2eTest {
 protected:
  std::vector<std::string> serverArgs() const override {
    writeFile(tmp_.sub("config.yaml"), kConfig);
    return {"--fake-gpus", "4xA100-80GB", "--config", tmp_.sub("config.yaml")};
  }
  void SetUp() override {
    E2eTest::SetUp();
    if (HasFatalFailure()) return;
    // Jobs go into an existing project only: one per queue of the config.
    for (const char* project : {"vision", "nlp"}) ASSERT_TRUE(ensureProject(api(), project));
  }
  ProcResult cli(std::vector<std::string> args) { return runCli(args, cliEnv()); }
};

std::string show(const ProcResult& r) {
  return "exit " + std::to_string(r.exit_code) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

TEST_F(SchedulingTest, APreemptedJobCheckpointsOnSigtermAndResumesAfterwards) {
  std::string ck = tmp_.sub("checkpoint");
  // Saves a checkpoint when asked to stop; a later attempt resumes from it.
  Json low = scriptJob("if [ -f " + ck + " ]; then echo resumed from $(cat " + ck +
                           "); exit 0; fi; trap 'echo 7 > " + ck +
                           "; echo checkpointed; exit 0' TERM; echo started; "
                           "while true; do sleep 0.05; done",
                       4);
  low["grace_period"] = "10s";
  std::int64_t a = api().submit(low);
  ASSERT_TRUE(api().waitState(a, "running"));
  ASSERT_TRUE(waitFor([&] { return api().logs(a).find("started") != std::string::npos; }, 10s));

  Json high = scriptJob("echo urgent", 4);
  high["priority"] = 10;
  std::int64_t b = api().submit(high);
  ASSERT_GT(b, 0);
  Json done = api().waitDone(b);
  EXPECT_EQ(done.value("state", ""), "succeeded") << done.dump();

  Json resumed = api().waitDone(a);
  EXPECT_EQ(resumed.value("state", ""), "succeeded") << resumed.dump();
  EXPECT_EQ(resumed.value("attempts", 0), 2);
  EXPECT_EQ(resumed.value("preemptions", 0), 1);
  EXPECT_EQ(api().logs(a), "resumed from 7\n");
  std::vector<std::string> events = api().eventLines(a);
  EXPECT_TRUE(anyContains(
      events, "Preempted: Preempted by job " + std::to_string(b) + " (higher priority 10 > 0)"))
      << joinLines(events);
  EXPECT_TRUE(anyContains(events, "Requeued: Stopped for job " + std::to_string(b)))
      << joinLines(events);
  expectNoLeftoverProcesses();
}

TEST_F(SchedulingTest, QueuesExplainQuotaPositionAndStartEstimate) {
  Json first = scriptJob("sleep 30", 2);
  first["project"] = "vision";
  first["max_runtime"] = "10m";
  std::int64_t a = api().submit(first);
  ASSERT_TRUE(api().waitState(a, "running"));
  Json second = scriptJob("echo second", 2);
  second["project"] = "vision";
  std::int64_t b = api().submit(second);
  ASSERT_GT(b, 0);
  Json waiting;
  ASSERT_TRUE(waitFor(
      [&] {
        waiting = api().job(b);
        return waiting.contains("waiting");
      },
      10s))
      << waiting.dump();
  EXPECT_EQ(waiting["waiting"].value("queue", ""), "vision");
  EXPECT_EQ(waiting["waiting"].value("position", 0), 1);
  std::string reason = waiting.value("reason", "");
  EXPECT_NE(reason.find("project vision uses 2 of 2 nominal GPUs"), std::string::npos) << reason;

  ProcResult queue = cli({"queue"});
  ASSERT_EQ(queue.exit_code, 0) << show(queue);
  EXPECT_TRUE(std::regex_search(queue.out, std::regex(R"(vision\s+lab\s+1\s+gpu\s+2\s+2\s+0)")))
      << show(queue);
  EXPECT_TRUE(std::regex_search(
      queue.out, std::regex("vision\\s+1\\s+" + std::to_string(b) + "\\s+job\\s+\\S+\\s+0\\s+2")))
      << show(queue);

  ProcResult describe = cli({"describe", std::to_string(b)});
  ASSERT_EQ(describe.exit_code, 0) << show(describe);
  EXPECT_NE(describe.out.find("Queue:      vision, position 1"), std::string::npos)
      << show(describe);
  EXPECT_NE(describe.out.find("Starts:     "), std::string::npos) << show(describe);

  // More than the queue could ever hold: refused at once, naming the limit.
  Json huge = scriptJob("true", 4);
  huge["project"] = "vision";
  HttpResult r = api().post("/api/v1/jobs", huge.dump());
  EXPECT_EQ(r.status, 422) << r.body;
  EXPECT_EQ(r.json["error"].value("field", ""), "resources.gpus") << r.body;
  EXPECT_NE(r.body.find("project vision may use at most 2 GPUs in queue vision"), std::string::npos)
      << r.body;

  ASSERT_EQ(api().post("/api/v1/jobs/" + std::to_string(a) + "/cancel", "").status, 200);
  EXPECT_EQ(api().waitDone(b).value("state", ""), "succeeded");
}

TEST_F(SchedulingTest, TwoHalfGpuJobsShareOneGpuAndKnowTheirShare) {
  std::string script =
      "echo CVD=$CUDA_VISIBLE_DEVICES SHARE=$TRAINYARD_GPU_SHARE "
      "MPS=$CUDA_MPS_ACTIVE_THREAD_PERCENTAGE; sleep 1";
  Json half = scriptJob(script);
  half["resources"] = {{"gpus", 0.5}};
  std::int64_t a = api().submit(half);
  std::int64_t b = api().submit(half);
  ASSERT_TRUE(api().waitState(a, "running"));
  ASSERT_TRUE(api().waitState(b, "running"));
  Json nodes = api().get("/api/v1/nodes").json;
  int shared = 0;
  for (const auto& g : nodes["nodes"][0]["gpus"]) {
    if (g["jobs"].size() == 2) {
      ++shared;
      EXPECT_EQ(g.value("used", ""), "1");
    }
  }
  EXPECT_EQ(shared, 1) << nodes.dump();
  api().waitDone(a);
  api().waitDone(b);
  std::string la = api().logs(a);
  EXPECT_TRUE(std::regex_search(la, std::regex(R"(CVD=\d SHARE=0.5 MPS=50)"))) << la;
  EXPECT_EQ(la.substr(0, la.find(' ')), api().logs(b).substr(0, la.find(' ')));
}

}  // namespace
}  // namespace ty::e2e
