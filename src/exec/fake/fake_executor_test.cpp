#include "exec/fake/fake_executor.h"

#include <gtest/gtest.h>

#include <csignal>

namespace ty {
namespace {

LaunchRequest request(int replicas) {
  LaunchRequest r;
  r.key = AttemptKey{JobId(1), 1};
  r.spec.command = {"train"};
  r.replicas.assign(static_cast<size_t>(replicas), ReplicaPlacement{"n", {}});
  return r;
}

class FakeExecutorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    fake_.setObserver([this](const ReplicaExit& e) { exits_.push_back(e); });
  }
  FakeExecutor fake_;
  std::vector<ReplicaExit> exits_;
};

TEST_F(FakeExecutorTest, LaunchFinishAndRelaunchReportsRecordedExit) {
  auto r = fake_.launch(request(2));
  ASSERT_TRUE(r.isOk());
  ASSERT_EQ(r->started.size(), 2u);
  EXPECT_FALSE(r->started[0].adopted);
  EXPECT_TRUE(fake_.running(request(2).key, 1));

  auto again = fake_.launch(request(2));  // adopt
  ASSERT_TRUE(again.isOk());
  EXPECT_TRUE(again->started[0].adopted);
  EXPECT_EQ(again->started[0].pid, r->started[0].pid);

  EXPECT_TRUE(fake_.finish(request(2).key, 0, 3));
  EXPECT_FALSE(fake_.finish(request(2).key, 0, 3));  // already ended
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].exit_code, 3);
  EXPECT_EQ(exits_[0].message, "exited with code 3");

  auto third = fake_.launch(request(2));
  ASSERT_TRUE(third.isOk());
  ASSERT_EQ(third->started.size(), 1u);  // replica 1 still runs
  fake_.flush();
  ASSERT_EQ(exits_.size(), 2u);  // replica 0's exit reported again
  EXPECT_EQ(exits_[1].exit_code, 3);
  EXPECT_EQ(fake_.launches().size(), 3u);
}

TEST_F(FakeExecutorTest, SignalsAreRecordedAndCanEndReplicas) {
  ASSERT_TRUE(fake_.launch(request(1)).isOk());
  ASSERT_TRUE(fake_.signal(request(1).key, SIGTERM).isOk());
  EXPECT_TRUE(exits_.empty());
  fake_.setExitOnSignal(true);
  ASSERT_TRUE(fake_.signal(request(1).key, SIGKILL).isOk());
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_EQ(exits_[0].exit_code, 137);
  EXPECT_EQ(exits_[0].signal, SIGKILL);
  EXPECT_EQ(exits_[0].message, "killed by SIGKILL");
  ASSERT_EQ(fake_.signals().size(), 2u);
  EXPECT_EQ(fake_.signals()[0].sig, SIGTERM);
  fake_.release(request(1).key);
  EXPECT_EQ(fake_.releases().size(), 1u);
}

TEST_F(FakeExecutorTest, FailNextLaunchAndLost) {
  fake_.failNextLaunch(Status::failedPrecondition("podman missing"));
  auto r = fake_.launch(request(1));
  ASSERT_FALSE(r.isOk());
  EXPECT_EQ(r.status().message(), "podman missing");
  ASSERT_TRUE(fake_.launch(request(1)).isOk());
  EXPECT_TRUE(fake_.lose(request(1).key, 0));
  ASSERT_EQ(exits_.size(), 1u);
  EXPECT_TRUE(exits_[0].lost);
  EXPECT_EQ(fake_.runningCount(), 0);
}

}  // namespace
}  // namespace ty
