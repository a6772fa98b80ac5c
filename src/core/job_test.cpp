#include "core/job.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

JobSpec valid() {
  JobSpec s;
  s.command = {"python3", "train.py"};
  return s;
}

TEST(ValidateSpec, AcceptsAMinimalSpec) { EXPECT_TRUE(validateSpec(valid()).isOk()); }

TEST(ValidateSpec, AcceptsAShareOfOneGpu) {
  JobSpec s = valid();
  s.resources.gpus = Quantity::fromMilli(250);
  EXPECT_TRUE(validateSpec(s).isOk());
}

TEST(ValidateSpec, NamesTheFieldAtFault) {
  struct Case {
    std::function<void(JobSpec&)> change;
    std::string field;
  };
  std::vector<Case> cases = {
      {[](JobSpec& s) { s.command.clear(); }, "command"},
      {[](JobSpec& s) { s.script = "echo hi"; }, "script"},
      {[](JobSpec& s) { s.resources.gpus = Quantity::fromMilli(1500); }, "resources.gpus"},
      {[](JobSpec& s) { s.resources.gpus = Quantity::fromMilli(333); }, "resources.gpus"},
      {[](JobSpec& s) {
         s.resources.gpus = Quantity::fromMilli(500);
         s.replicas = 2;
       },
       "replicas"},
      {[](JobSpec& s) { s.min_runtime = -1; }, "min_runtime"},
      {[](JobSpec& s) { s.node_selector[""] = "x"; }, "node_selector"},
      {[](JobSpec& s) { s.replicas = 0; }, "replicas"},
      {[](JobSpec& s) { s.env["1BAD"] = "x"; }, "env.1BAD"},
      {[](JobSpec& s) { s.env["CUDA_VISIBLE_DEVICES"] = "0"; }, "env.CUDA_VISIBLE_DEVICES"},
      {[](JobSpec& s) { s.workdir = "relative/dir"; }, "workdir"},
      {[](JobSpec& s) { s.name = "has space"; }, "name"},
      {[](JobSpec& s) { s.project = ""; }, "project"},
      {[](JobSpec& s) { s.resources.memory_bytes = 100; }, "resources.memory"},
  };
  for (const auto& c : cases) {
    JobSpec s = valid();
    c.change(s);
    Status st = validateSpec(s);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << c.field;
    EXPECT_EQ(st.field(), c.field);
    EXPECT_FALSE(st.message().empty());
  }
}

TEST(JobState, RoundTripsNames) {
  for (auto s : {JobState::kPending, JobState::kRunning, JobState::kCancelled}) {
    EXPECT_EQ(parseJobState(jobStateName(s)), s);
  }
  EXPECT_FALSE(parseJobState("bogus"));
  EXPECT_TRUE(isTerminal(JobState::kFailed));
  EXPECT_FALSE(isTerminal(JobState::kRunning));
}

}  // namespace
}  // namespace ty
