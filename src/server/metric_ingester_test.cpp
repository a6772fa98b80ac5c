#include "server/metric_ingester.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "common/temp_dir_test_util.h"

namespace ty {
namespace {

class MetricIngesterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_FALSE(dir_.path().empty());
    store_ = newMemoryStore();
    std::vector<Job> jobs(1);
    jobs[0].spec.name = "train";
    jobs[0].spec.project = "default";
    jobs[0].spec.command = {"true"};
    jobs[0].spec.replicas = 2;
    jobs[0].user = "ada";
    ASSERT_TRUE(store_->createJobs(jobs, {}).isOk());
    job_ = jobs[0];
    setState(JobState::kRunning, 1);
  }
  void setState(JobState state, int attempts) {
    job_.state = state;
    job_.attempts = attempts;
    WriteBatch b;
    b.jobs.push_back(job_);
    ASSERT_TRUE(store_->apply(b).isOk());
  }
  void append(int attempt, int replica, const std::string& text) {
    RunLayout layout(dir_.path());
    AttemptKey key{job_.id, attempt};
    std::filesystem::create_directories(layout.replicaDir(key, replica));
    std::ofstream(layout.metricsFile(key, replica), std::ios::app) << text;
  }
  std::vector<TrainingPoint> series(const std::string& name) {
    TrainingSeriesQuery q;
    q.name = name;
    return store_->trainingSeries(job_.id, q).value();
  }

  ::ty::testing::TempDir dir_{"ty_ingest_"};
  std::unique_ptr<Store> store_;
  Job job_;
  ManualClock clock_{1'000'000};
};

TEST_F(MetricIngesterTest, ReadsNewWholeLinesOfEveryReplica) {
  MetricIngester ingester(*store_, RunLayout(dir_.path()), clock_);
  append(1, 0, "TRAINYARD_METRIC {\"step\":1,\"loss\":0.9,\"lr\":0.1}\n");
  append(1, 1, "TRAINYARD_METRIC {\"step\":1,\"loss\":0.8}\n");
  // Half a line: not taken until its newline is there.
  append(1, 0, "TRAINYARD_METRIC {\"step\":2,\"lo");
  ASSERT_TRUE(ingester.pollOnce().isOk());
  auto loss = series("loss");
  ASSERT_EQ(loss.size(), 2u);
  EXPECT_EQ(loss[0].source, "log:1:0:0");
  EXPECT_EQ(loss[1].source, "log:1:1:0");
  EXPECT_EQ(loss[0].time, 1'000'000);  // no "time" in the line: when it was read

  append(1, 0, "ss\":0.7,\"time\":2000}\n");
  ASSERT_TRUE(ingester.pollOnce().isOk());
  loss = series("loss");
  ASSERT_EQ(loss.size(), 3u);
  EXPECT_EQ(loss[2].step, 2);
  EXPECT_EQ(loss[2].time, 2'000'000);
  EXPECT_EQ(loss[2].source,
            "log:1:0:" + std::to_string(std::string("TRAINYARD_METRIC {\"step\":1,\"loss\":0.9,"
                                                    "\"lr\":0.1}\n")
                                            .size()));
  EXPECT_EQ(ingester.stats().lines, 3);
}

TEST_F(MetricIngesterTest, ReadingAgainAfterARestartAddsNothing) {
  append(
      1, 0,
      "TRAINYARD_METRIC {\"step\":1,\"loss\":0.9}\nTRAINYARD_METRIC {\"step\":2,\"loss\":0.8}\n");
  {
    MetricIngester first(*store_, RunLayout(dir_.path()), clock_);
    ASSERT_TRUE(first.pollOnce().isOk());
    EXPECT_EQ(first.stats().points, 2);
  }
  MetricIngester second(*store_, RunLayout(dir_.path()), clock_);
  ASSERT_TRUE(second.pollOnce().isOk());
  EXPECT_EQ(second.stats().lines, 2);
  EXPECT_EQ(second.stats().points, 0);
  EXPECT_EQ(series("loss").size(), 2u);
}

TEST_F(MetricIngesterTest, EndedAttemptIsReadOnceMore) {
  MetricIngester ingester(*store_, RunLayout(dir_.path()), clock_);
  ASSERT_TRUE(ingester.pollOnce().isOk());
  // The job wrote its last lines and ended before the next round.
  append(1, 0, "TRAINYARD_METRIC {\"step\":9,\"loss\":0.1}\n");
  setState(JobState::kSucceeded, 1);
  ASSERT_TRUE(ingester.pollOnce().isOk());
  ASSERT_EQ(series("loss").size(), 1u);
  EXPECT_EQ(series("loss")[0].step, 9);
  // Then it is forgotten: later bytes are not read.
  append(1, 0, "TRAINYARD_METRIC {\"step\":10,\"loss\":0.1}\n");
  ASSERT_TRUE(ingester.pollOnce().isOk());
  EXPECT_EQ(series("loss").size(), 1u);
}

TEST_F(MetricIngesterTest, RetryMovesToTheNewAttempt) {
  MetricIngester ingester(*store_, RunLayout(dir_.path()), clock_);
  append(1, 0, "TRAINYARD_METRIC {\"step\":1,\"loss\":0.9}\n");
  ASSERT_TRUE(ingester.pollOnce().isOk());
  setState(JobState::kRunning, 2);
  append(1, 0, "TRAINYARD_METRIC {\"step\":2,\"loss\":0.8}\n");
  append(2, 0, "TRAINYARD_METRIC {\"step\":1,\"loss\":0.95}\n");
  ASSERT_TRUE(ingester.pollOnce().isOk());
  auto loss = series("loss");
  ASSERT_EQ(loss.size(), 3u);
  std::set<std::string> sources;
  for (const auto& p : loss) sources.insert(p.source);
  EXPECT_TRUE(sources.contains("log:2:0:0"));
}

TEST_F(MetricIngesterTest, JobThatStartedAndEndedBetweenRoundsIsRead) {
  MetricIngester ingester(*store_, RunLayout(dir_.path()), clock_);
  ASSERT_TRUE(ingester.pollOnce().isOk());
  // A second job, submitted, run and finished before the next round.
  std::vector<Job> jobs(1);
  jobs[0].spec.name = "short";
  jobs[0].spec.project = "default";
  jobs[0].spec.command = {"true"};
  jobs[0].user = "ada";
  ASSERT_TRUE(store_->createJobs(jobs, {}).isOk());
  Job short_job = jobs[0];
  short_job.state = JobState::kSucceeded;
  short_job.attempts = 1;
  WriteBatch b;
  b.jobs.push_back(short_job);
  ASSERT_TRUE(store_->apply(b).isOk());
  RunLayout layout(dir_.path());
  AttemptKey key{short_job.id, 1};
  std::filesystem::create_directories(layout.replicaDir(key, 0));
  std::ofstream(layout.metricsFile(key, 0)) << "TRAINYARD_METRIC {\"step\":1,\"loss\":0.5}\n";
  ASSERT_TRUE(ingester.pollOnce().isOk());
  TrainingSeriesQuery q;
  q.name = "loss";
  EXPECT_EQ(store_->trainingSeries(short_job.id, q).value().size(), 1u);
}

TEST_F(MetricIngesterTest, AttemptRetriedBetweenRoundsIsReadToItsEnd) {
  MetricIngester ingester(*store_, RunLayout(dir_.path()), clock_);
  setState(JobState::kPending, 0);
  ASSERT_TRUE(ingester.pollOnce().isOk());
  // Attempt 1 ran and failed, attempt 2 started, all before the next round.
  append(1, 0, "TRAINYARD_METRIC {\"step\":1,\"loss\":0.9}\n");
  append(2, 0, "TRAINYARD_METRIC {\"step\":1,\"loss\":0.8}\n");
  setState(JobState::kRunning, 2);
  ASSERT_TRUE(ingester.pollOnce().isOk());
  EXPECT_EQ(series("loss").size(), 2u);
}

TEST_F(MetricIngesterTest, BadLinesAreCountedAndSkipped) {
  MetricIngester ingester(*store_, RunLayout(dir_.path()), clock_);
  append(1, 0, "garbage\nTRAINYARD_METRIC {\"loss\":\"x\"}\n\nTRAINYARD_METRIC {\"loss\":0.5}\n");
  ASSERT_TRUE(ingester.pollOnce().isOk());
  EXPECT_EQ(ingester.stats().bad_lines, 3);
  EXPECT_EQ(ingester.stats().lines, 1);
  ASSERT_EQ(series("loss").size(), 1u);
}

TEST_F(MetricIngesterTest, PendingAndFinishedJobsAreNotRead) {
  setState(JobState::kPending, 0);
  MetricIngester ingester(*store_, RunLayout(dir_.path()), clock_);
  append(1, 0, "TRAINYARD_METRIC {\"loss\":0.5}\n");
  ASSERT_TRUE(ingester.pollOnce().isOk());
  EXPECT_TRUE(series("loss").empty());
}

}  // namespace
}  // namespace ty
