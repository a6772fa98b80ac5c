#include "sim/job_metrics.h"

#include <gtest/gtest.h>

namespace ty {
namespace {

TEST(JobMetrics, JainIndex) {
  EXPECT_DOUBLE_EQ(jainIndex({2, 2, 2}), 1.0);
  EXPECT_DOUBLE_EQ(jainIndex({1, 0, 0, 0}), 0.25);
  EXPECT_DOUBLE_EQ(jainIndex({}), 1.0);
  EXPECT_NEAR(jainIndex({1, 3}), 16.0 / 20.0, 1e-12);
}

TEST(JobMetrics, NearestRankPercentile) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(percentile(v, 99), 99);
  EXPECT_DOUBLE_EQ(percentile(v, 100), 100);
  EXPECT_DOUBLE_EQ(percentile({5}, 99), 5);
  EXPECT_DOUBLE_EQ(percentile({}, 99), 0);
}

TEST(JobMetrics, SummaryOfAHandMadeReplay) {
  ReplayInput in;
  in.nodes = 1;
  in.gpus_per_node = 4;
  in.queues = {{"a", 0.5, 2}, {"b", 0.5, 2}};
  in.jobs = {{JobId(1), 0, 0, 100'000, 4, 1, 4, 0}, {JobId(2), 1, 0, 100'000, 4, 1, 4, 0}};
  ReplayResult r;
  r.policy = "fifo";
  r.first_submit = 0;
  r.last_finish = 200'000;
  r.busy_gpu_ms = 4 * 200'000;
  JobOutcome a{JobId(1), 0, 4, 0, 0, 100'000, 100'000, 0, 100'000, 0, 0, 0};
  JobOutcome b{JobId(2), 1, 4, 0, 100'000, 200'000, 100'000, 0, 100'000, 0, 0, 0};
  r.jobs = {a, b};
  PolicySummary s = summarize(r, in);
  EXPECT_DOUBLE_EQ(s.mean_jct_s, 150);
  EXPECT_DOUBLE_EQ(s.p99_jct_s, 200);
  EXPECT_DOUBLE_EQ(s.mean_queue_s, 50);
  EXPECT_DOUBLE_EQ(s.utilisation, 1.0);
  EXPECT_DOUBLE_EQ(s.makespan_s, 200);
  // Slowdowns 1 and 2: (1 + 2)^2 / (2 * (1 + 4)).
  EXPECT_DOUBLE_EQ(s.jain, 0.9);
  EXPECT_DOUBLE_EQ(offeredLoad(in), 0);  // all submitted at once: no span

  ReplayReportHeader h;
  h.trace = "t.csv";
  const std::string json = summaryJson(h, {s});
  EXPECT_NE(json.find("\"policy\":\"fifo\""), std::string::npos);
  EXPECT_NE(json.find("\"jain\":0.9"), std::string::npos);
  const std::string csv = jobsCsv({r}, in);
  EXPECT_NE(csv.find("fifo,2,b,4,0.000,100.000,200.000,100.000,0.000,200.000,100.000,0"),
            std::string::npos)
      << csv;
  EXPECT_NE(formatSummaryTable(h, {s}).find("fifo"), std::string::npos);
}

}  // namespace
}  // namespace ty
