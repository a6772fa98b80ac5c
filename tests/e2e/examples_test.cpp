// The shipped example job, run through the platform: it is cancelled mid
// run, checkpoints within its grace period, and a second submission of the
// same spec resumes from that checkpoint and finishes.
#include <fstream>
#include <sstream>

#include "harness.h"

namespace ty::e2e {
namespace {

class ExamplesTest : public E2eTest {};

Json exampleSpec(const std::string& name) {
  std::ifstream in(std::string(TY_SOURCE_DIR) + "/examples/" + name);
  std::stringstream text;
  text << in.rdbuf();
  auto parsed = parseBody(text.str(), /*yaml=*/true);
  EXPECT_TRUE(parsed.isOk()) << parsed.status().toString();
  return parsed.isOk() ? *parsed : Json();
}

// Replaces the value after `flag` in the spec's command.
void setArg(Json& spec, const std::string& flag, const std::string& value) {
  for (size_t i = 0; i + 1 < spec["command"].size(); ++i) {
    if (spec["command"][i] == flag) spec["command"][i + 1] = value;
  }
}

TEST_F(ExamplesTest, TrainCpuCheckpointsOnCancelAndResumes) {
  Json spec = exampleSpec("train_cpu.yaml");
  ASSERT_TRUE(spec.is_object());
  spec["workdir"] = TY_SOURCE_DIR;
  spec["command"].push_back("--checkpoint-dir");
  spec["command"].push_back(tmp_.sub("checkpoints"));
  spec["env"][kMarkerEnv] = markerValue();
  spec["grace_period"] = "10s";
  setArg(spec, "--steps", "60");
  setArg(spec, "--step-seconds", "0.05");
  setArg(spec, "--checkpoint-every", "10");
  // The example names its project; jobs go into an existing project only.
  ASSERT_TRUE(ensureProject(api(), spec.value("project", "default")));

  std::int64_t first = api().submit(spec);
  ASSERT_GT(first, 0);
  ASSERT_TRUE(
      waitFor([&] { return api().logs(first).find("step 25/60") != std::string::npos; }, 20s))
      << api().logs(first);
  EXPECT_EQ(api().post("/api/v1/jobs/" + std::to_string(first) + "/cancel", "").status, 200);
  Json cancelled = api().waitDone(first);
  EXPECT_EQ(cancelled.value("state", ""), "cancelled");
  EXPECT_EQ(cancelled["exit_code"], 143) << api().logs(first);
  EXPECT_NE(api().logs(first).find("checkpointing and exiting"), std::string::npos);
  // Each checkpoint was reported to the server through TRAINYARD_CHECKPOINT_MARK.
  EXPECT_TRUE(fileExists(data_dir_ + "/jobs/" + std::to_string(first) + "/checkpoint"));

  std::int64_t second = api().submit(spec);
  ASSERT_GT(second, 0);
  Json done = api().waitDone(second, 30s);
  std::string log = api().logs(second);
  EXPECT_EQ(done.value("state", ""), "succeeded") << log;
  EXPECT_NE(log.find("resumed from step "), std::string::npos) << log;
  EXPECT_EQ(log.find("step 1/60 "), std::string::npos) << "started over instead of resuming";
  EXPECT_NE(log.find("done: 60 steps"), std::string::npos) << log;
  expectNoLeftoverProcesses();
}

}  // namespace
}  // namespace ty::e2e
