// The reconcile loop against the in-memory store, the fake executor and a
// clock moved by hand: every transition, timer and recovery path.
#include "server/job_service.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "exec/fake/fake_executor.h"
#include "server/job_service_test_fixture.h"

namespace ty {
namespace {

using test::JobServiceTest;
using test::spec;
using namespace std::chrono_literals;

TEST_F(JobServiceTest, RunsAJobToSuccess) {
  auto j = submit(spec(2), "alice");
  ASSERT_TRUE(j.isOk()) << j.status().toString();
  EXPECT_EQ(j->state, JobState::kPending);
  waitState(j->id, JobState::kRunning);
  auto launches = exec_.launches();
  ASSERT_EQ(launches.size(), 1u);
  EXPECT_EQ(launches[0].replicas[0].gpus, (std::vector<int>{0, 1}));
  EXPECT_EQ(launches[0].replica_gpus[0].size(), 2u);
  EXPECT_EQ(launches[0].key.number, 1);
  exec_.finishAll({j->id, 1}, 0);
  Job done = waitState(j->id, JobState::kSucceeded);
  EXPECT_EQ(done.exit_code, 0);
  EXPECT_TRUE(hasEvent(j->id, "Submitted: Submitted by alice: 2 GPUs"));
  EXPECT_TRUE(hasEvent(j->id, "Placed: Placed on local, GPUs 0,1"));
  EXPECT_TRUE(hasEvent(j->id, "Started: Started pid 1000"));
  ASSERT_EQ(exec_.releases().size(), 1u);
}

TEST_F(JobServiceTest, RefusesInvalidAndInfeasibleSpecs) {
  auto bad = submit(spec(16), "alice");
  EXPECT_EQ(bad.status().code(), StatusCode::kInfeasible);
  EXPECT_EQ(bad.status().message(), "needs 16 GPUs per replica; the largest node has 4");
  JobSpec s = spec(1);
  s.command.clear();
  EXPECT_EQ(submit(s, "alice").status().field(), "command");
  EXPECT_TRUE(store_->listJobs({}).value().jobs.empty());  // nothing half-written
}

TEST_F(JobServiceTest, ExplainsWhyAJobWaitsAndStartsItWhenGpusFree) {
  auto a = submit(spec(4, "a"), "alice");
  waitState(a->id, JobState::kRunning);
  auto b = submit(spec(4, "b"), "bob");
  Job waiting = waitJob(b->id, [](const Job& j) { return !j.reason.empty(); });
  EXPECT_EQ(waiting.reason, "Waiting: needs 4 GPUs, 0 free on node local");
  // The live explanation is published right after the commit that wrote it.
  ASSERT_TRUE(eventually([&] { return service_->waitInfo(b->id).has_value(); }));
  EXPECT_EQ(service_->waitInfo(b->id)->position, 1);
  EXPECT_TRUE(hasEvent(b->id, "Waiting: needs 4 GPUs, 0 free on node local"));
  exec_.finishAll({a->id, 1}, 0);
  waitState(b->id, JobState::kRunning);
  EXPECT_FALSE(service_->waitInfo(b->id).has_value());
}

TEST_F(JobServiceTest, RetriesWithBackoffThenSucceeds) {
  JobSpec s = spec(1);
  s.retries = {2, 10'000};
  auto j = submit(s, "alice");
  waitState(j->id, JobState::kRunning);
  exec_.finishAll({j->id, 1}, 3);
  Job retrying = waitState(j->id, JobState::kPending);
  EXPECT_EQ(retrying.reason, "Exited with code 3, retry 1 of 2 in 10s");
  EXPECT_EQ(retrying.not_before, clock_.now() + 10'000);
  advance(9'000);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(job(j->id).state, JobState::kPending);  // backoff not over
  advance(1'000);
  waitState(j->id, JobState::kRunning);
  EXPECT_EQ(exec_.launches().back().key.number, 2);
  exec_.finishAll({j->id, 2}, 3);
  Job again = waitState(j->id, JobState::kPending);
  EXPECT_EQ(again.reason, "Exited with code 3, retry 2 of 2 in 20s");  // doubled
  advance(20'000);
  waitState(j->id, JobState::kRunning);
  exec_.finishAll({j->id, 3}, 3);
  Job failed = waitState(j->id, JobState::kFailed);
  EXPECT_EQ(failed.attempts, 3);
  EXPECT_EQ(failed.exit_code, 3);
  EXPECT_EQ(failed.reason, "Exited with code 3 (no retries left)");
  EXPECT_EQ(store_->attempts(j->id).value().size(), 3u);
}

TEST_F(JobServiceTest, CancelsAPendingJobAtOnce) {
  auto a = submit(spec(4, "a"), "alice");
  waitState(a->id, JobState::kRunning);
  auto b = submit(spec(4, "b"), "bob");
  waitJob(b->id, [](const Job& j) { return !j.reason.empty(); });
  auto c = service_->cancel(b->id, "bob");
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->state, JobState::kCancelled);
  EXPECT_EQ(job(b->id).state, JobState::kCancelled);  // durable before the answer
  EXPECT_EQ(service_->cancel(b->id, "bob").status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(service_->cancel(JobId(999), "bob").status().code(), StatusCode::kNotFound);
}

TEST_F(JobServiceTest, CancelSendsSigtermThenSigkillAfterGrace) {
  auto j = submit(spec(1), "alice");
  waitState(j->id, JobState::kRunning);
  auto c = service_->cancel(j->id, "alice");
  ASSERT_TRUE(c.isOk());
  EXPECT_EQ(c->state, JobState::kRunning);
  EXPECT_GT(job(j->id).cancel_requested_at, 0);
  auto sigs = exec_.signals();
  ASSERT_EQ(sigs.size(), 1u);
  EXPECT_EQ(sigs[0].sig, SIGTERM);
  advance(4'999);
  std::this_thread::sleep_for(20ms);
  EXPECT_EQ(exec_.signals().size(), 1u);
  advance(1);
  ASSERT_EQ(waitSignals(2).size(), 2u);
  EXPECT_EQ(exec_.signals()[1].sig, SIGKILL);
  exec_.finish({j->id, 1}, 0, 0, SIGKILL);
  Job done = waitState(j->id, JobState::kCancelled);
  EXPECT_EQ(done.exit_code, 137);
  EXPECT_TRUE(hasEvent(j->id, "Grace period of 5s is over: sending SIGKILL"));
}

TEST_F(JobServiceTest, KillsAJobThatExceedsMaxRuntime) {
  JobSpec s = spec(1);
  s.max_runtime = 60'000;
  s.retries = {3, 1000};  // a timeout is not retried
  exec_.setExitOnSignal(true);
  auto j = submit(s, "alice");
  waitState(j->id, JobState::kRunning);
  advance(60'000);
  Job failed = waitState(j->id, JobState::kFailed);
  EXPECT_EQ(failed.reason, "Killed: exceeded max_runtime 1m");
  EXPECT_EQ(failed.attempts, 1);
}

TEST_F(JobServiceTest, AGangStopsWhenOneReplicaFails) {
  JobSpec s = spec(1);
  s.replicas = 2;
  auto j = submit(s, "alice");
  waitState(j->id, JobState::kRunning);
  ASSERT_EQ(exec_.launches()[0].replicas.size(), 2u);
  EXPECT_NE(exec_.launches()[0].replicas[0].gpus, exec_.launches()[0].replicas[1].gpus);
  exec_.finish({j->id, 1}, 1, 2);
  ASSERT_EQ(waitSignals(1).size(), 1u);
  EXPECT_EQ(exec_.signals()[0].sig, SIGTERM);
  exec_.finish({j->id, 1}, 0, 143, SIGTERM);
  Job failed = waitState(j->id, JobState::kFailed);
  EXPECT_EQ(failed.exit_code, 2);
  EXPECT_EQ(failed.reason, "Replica 1 exited with code 2");
}

TEST_F(JobServiceTest, FailsAJobWhoseLaunchFails) {
  exec_.failNextLaunch(Status::failedPrecondition("image set but podman is not installed"));
  auto j = submit(spec(1), "alice");
  Job failed = waitState(j->id, JobState::kFailed);
  EXPECT_NE(failed.reason.find("podman is not installed"), std::string::npos);
  // Its GPUs are free again.
  auto k = submit(spec(4), "alice");
  waitState(k->id, JobState::kRunning);
}

TEST_F(JobServiceTest, RestartAdoptsRunningJobsAndKeepsPendingOnes) {
  auto a = submit(spec(4, "a"), "alice");
  waitState(a->id, JobState::kRunning);
  auto b = submit(spec(2, "b"), "alice");
  waitJob(b->id, [](const Job& j) { return !j.reason.empty(); });
  restart();
  waitJob(a->id, [&](const Job&) { return hasEvent(a->id, "Adopted"); });
  EXPECT_EQ(exec_.launches().size(), 2u);  // the same attempt, launched again = adopted
  EXPECT_EQ(exec_.launches()[1].key, (AttemptKey{a->id, 1}));
  EXPECT_EQ(exec_.runningCount(), 1);
  EXPECT_EQ(job(b->id).state, JobState::kPending);
  exec_.finishAll({a->id, 1}, 0);
  waitState(a->id, JobState::kSucceeded);
  waitState(b->id, JobState::kRunning);
  EXPECT_EQ(job(a->id).attempts, 1);
}

TEST_F(JobServiceTest, ExitsWhileDownAreRecordedAfterRestart) {
  auto j = submit(spec(1), "alice");
  waitState(j->id, JobState::kRunning);
  service_->stop();
  exec_.finishAll({j->id, 1}, 7);  // no loop listens
  start();
  exec_.flush();
  Job failed = waitState(j->id, JobState::kFailed);
  EXPECT_EQ(failed.exit_code, 7);
}

TEST_F(JobServiceTest, WaitingJobsGetAnEventOnlyWhenTheirReasonChanges) {
  auto a = submit(spec(2, "a"), "alice");
  auto b = submit(spec(2, "b"), "alice");
  waitState(b->id, JobState::kRunning);
  auto c = submit(spec(4, "c"), "alice");
  auto message = [&] {
    auto w = service_->waitInfo(c->id);
    return w ? w->message : std::string();
  };
  EXPECT_TRUE(eventually([&] { return !message().empty(); }));
  EXPECT_EQ(message(), "Waiting: needs 4 GPUs, 0 free on node local");
  exec_.finishAll({a->id, 1}, 0);  // 2 GPUs free now: the count changes, the reason does not
  waitState(a->id, JobState::kSucceeded);
  eventually([&] { return message().find("2 free") != std::string::npos; });
  EXPECT_EQ(message(), "Waiting: needs 4 GPUs, 2 free on node local");
  int waiting_events = 0;
  for (const auto& t : eventTexts(c->id)) waiting_events += t.rfind("Waiting:", 0) == 0;
  EXPECT_EQ(waiting_events, 1);
}

TEST_F(JobServiceTest, AFailedStoreWriteIsRepairedFromTheStoreBeforeActing) {
  flaky_->fail_applies = 1;  // the placement of the first job is not recorded
  flaky_->fail_reads = 1;    // and the first read-back fails too
  auto j = submit(spec(1), "alice");
  ASSERT_TRUE(j.isOk());
  Job running = waitState(j->id, JobState::kRunning);
  EXPECT_EQ(running.attempts, 1);
  EXPECT_EQ(exec_.launches().size(), 1u);  // nothing was launched unrecorded
  EXPECT_TRUE(eventually([&] { return service_->ready(); }));
  exec_.finishAll({j->id, 1}, 0);
  waitState(j->id, JobState::kSucceeded);
}

TEST_F(JobServiceTest, PendingJobsAreScheduledRightAfterARestart) {
  service_->stop();
  Job queued;
  queued.spec = spec(2);
  queued.user = "alice";
  queued.created_at = queued.updated_at = clock_.now();
  std::vector<Job> jobs = {queued};
  ASSERT_TRUE(store_->createJobs(jobs, {}).isOk());
  start();  // nothing else happens: no submission, no exit, no timer
  waitState(jobs[0].id, JobState::kRunning);
}

TEST_F(JobServiceTest, AResentSubmissionWithTheSameKeyReturnsTheFirstJob) {
  auto first = service_->submit(spec(1), "alice", "run-42");
  ASSERT_TRUE(first.isOk());
  EXPECT_FALSE(first->replayed);
  auto again = service_->submit(spec(1), "alice", "run-42");
  ASSERT_TRUE(again.isOk());
  EXPECT_TRUE(again->replayed);
  EXPECT_EQ(again->job.id, first->job.id);
  auto other_user = service_->submit(spec(1), "bob", "run-42");
  EXPECT_FALSE(other_user->replayed);
  waitState(first->job.id, JobState::kRunning);
  waitState(other_user->job.id, JobState::kRunning);
  EXPECT_EQ(store_->listJobs({}).value().jobs.size(), 2u);
  EXPECT_EQ(exec_.launches().size(), 2u);
}

TEST_F(JobServiceTest, ConcurrentSubmissionsWithOneKeyStoreOneJob) {
  std::vector<std::thread> threads;
  std::vector<JobId> ids(8);
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] { ids[i] = service_->submit(spec(1), "alice", "k")->job.id; });
  }
  for (auto& t : threads) t.join();
  for (JobId id : ids) EXPECT_EQ(id, ids[0]);
  EXPECT_EQ(store_->listJobs({}).value().jobs.size(), 1u);
}

TEST_F(JobServiceTest, NodesShowWhichJobHoldsEachGpu) {
  auto j = submit(spec(2), "alice");
  waitState(j->id, JobState::kRunning);
  std::vector<NodeView> nodes;
  eventually([&] {
    nodes = service_->nodes();
    return !nodes.empty() && nodes[0].gpus[0].holders == std::vector<JobId>{j->id};
  });
  ASSERT_EQ(nodes.size(), 1u);
  EXPECT_EQ(nodes[0].gpus[0].holders, std::vector<JobId>{j->id});
  EXPECT_EQ(nodes[0].gpus[1].holders, std::vector<JobId>{j->id});
  EXPECT_EQ(nodes[0].gpus[1].used_milli, 1000);
  EXPECT_TRUE(nodes[0].gpus[2].holders.empty());
}

}  // namespace
}  // namespace ty
